/** API-neutral reading of a request body: how the conversation ends, its text, its size. */
import { createTokenCounter } from '../../../src/model/tokens.js';

/** The last item of a request's conversation, as far as picking the next step needs it. */
export type ConversationEnd =
  | { readonly kind: 'none' }
  | { readonly kind: 'prompt'; readonly text: string }
  | { readonly kind: 'tool-result'; readonly callId: string; readonly text: string };

/** Keys whose string values are opaque (ids, signatures, blobs), not text a model reads. */
const OPAQUE_KEYS = new Set(['id', 'tool_use_id', 'call_id', 'signature', 'encrypted_content', 'data', 'model', 'type', 'role', 'cache_control', 'status']);

/** Every readable string under `v`, joined by newlines (opaque fields left out). */
export function textOf(v: unknown): string {
  const out: string[] = [];
  const walk = (x: unknown, key: string | undefined): void => {
    if (typeof x === 'string') {
      if (!key || !OPAQUE_KEYS.has(key)) out.push(x);
    } else if (Array.isArray(x)) {
      for (const y of x) walk(y, key);
    } else if (typeof x === 'object' && x !== null) {
      for (const [k, y] of Object.entries(x)) walk(y, k);
    }
  };
  walk(v, undefined);
  return out.join('\n');
}

const counter = createTokenCounter('o200k_base');

/**
 * The input size the server reports as `usage`: o200k tokens of every readable string the
 * request sends to the model (system prompt, tool definitions, messages). Not Anthropic's or
 * OpenAI's tokenizer, but a faithful count of what the agent actually sent — which is what
 * contextd's estimate is compared against.
 */
export function requestInputTokens(parts: readonly unknown[]): number {
  return parts.reduce<number>((sum, p) => sum + counter.count(textOf(p)), 0);
}

export function countTokens(text: string): number {
  return counter.count(text);
}
