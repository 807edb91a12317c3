/**
 * What the proxy models of one provider request: its pieces (system prompt, tool
 * definitions, messages, content blocks, tool calls and results) as normalized messages, and
 * the edits a plan makes to them. Each provider format (formats/) parses and renders these.
 */
import { createHash } from 'node:crypto';
import type { Message } from '../model/messages.js';

export const PROVIDER_FORMATS = ['anthropic', 'openai-chat', 'openai-responses'] as const;
export type ProviderFormatName = (typeof PROVIDER_FORMATS)[number];

/** A JSON object as parsed from a request body. */
export type JsonObject = Record<string, unknown>;

/** One modelled piece of a request and where it sits in the body. */
export interface RequestItem {
  /** Location in the body, format specific (e.g. `3.1` = message 3, content block 1; `sys`, `tools`). */
  readonly loc: string;
  /**
   * The normalized message. Its id is a hash chained over every item up to and including
   * this one, so an id names one exact prefix of the conversation: when anything earlier
   * changes, every later id changes too and old replacements stop matching.
   */
  readonly message: Message;
}

export interface ParsedRequest {
  readonly format: ProviderFormatName;
  /** The `model` field, when present. */
  readonly model: string | undefined;
  readonly stream: boolean;
  readonly items: readonly RequestItem[];
  /**
   * Items from this index on belong to the last exchange (the newest assistant message and
   * what answers it): they are sent exactly as the agent wrote them.
   */
  readonly protectedFrom: number;
  /** Text that identifies the conversation when the agent sends no session id (system + first message). */
  readonly fingerprint: string;
}

/** What a plan does to one item: drop it, and/or put a summary in its place. */
export interface ItemEdit {
  readonly drop: boolean;
  readonly insert?: { readonly role: 'user' | 'assistant'; readonly text: string };
}

/** A provider request format: from a body to items, and from items + edits back to a body. */
export interface ProviderFormat {
  readonly name: ProviderFormatName;
  parse(body: JsonObject): ParsedRequest;
  /**
   * `parse(body).fingerprint` without modelling the request: reads only the system prompt and
   * the first user item, hashes nothing (the proxy finds the conversation before it rewrites).
   */
  fingerprint(body: JsonObject): string;
  /** A new body with the edits applied (the input is not mutated); keys are item locations. */
  render(body: JsonObject, edits: ReadonlyMap<string, ItemEdit>): JsonObject;
}

/** Builds chained item ids: `p_` + 24 hex of sha256(previous id, canonical JSON of the item). */
export class IdChain {
  private prev = '';

  next(value: unknown): string {
    const id = `p_${createHash('sha256').update(this.prev).update('\u0000').update(canonicalJson(value)).digest('hex').slice(0, 24)}`;
    this.prev = id;
    return id;
  }
}

/**
 * JSON of a request piece without prompt-cache markers: agents move `cache_control`
 * breakpoints forward on every request, and that must not read as a change of content.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v));
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** Text of a content value that is a string or a list of parts with `text`. */
export function textOfContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const p of content) {
    if (typeof p === 'string') parts.push(p);
    else if (isObject(p) && typeof p['text'] === 'string') parts.push(p['text']);
  }
  return parts.join('\n');
}

/** Number of image / file parts in a content list (counted by a fixed estimate, never tokenized). */
export function imagesIn(content: unknown): number {
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const p of content) {
    if (!isObject(p)) continue;
    const t = p['type'];
    if (t === 'image' || t === 'image_url' || t === 'input_image' || t === 'document' || t === 'input_file') n++;
  }
  return n;
}

/** Harness-injected user text (reminders, environment blocks), not a real instruction. */
export function looksInjected(text: string): boolean {
  const t = text.trimStart();
  return t.startsWith('<system-reminder>') || t.startsWith('<environment_context>') || t.startsWith('# AGENTS.md') || t.startsWith('<command-') || t.startsWith('<local-command-') || t.startsWith('<user_instructions>');
}

/** Index of the first item of the last exchange: the newest assistant-side item and everything after it. */
export function protectedFromOf(items: readonly RequestItem[]): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const m = items[i]?.message;
    if (m && m.role === 'assistant') {
      // the whole run of assistant items of that reply
      let j = i;
      while (j > 0 && items[j - 1]?.message.role === 'assistant') j--;
      return j;
    }
  }
  // no assistant reply yet: the last item (the first prompt) is protected
  return Math.max(0, items.length - 1);
}

/** Stable fingerprint text of a conversation: its system prompt and first message. */
export function fingerprintOf(items: readonly RequestItem[]): string {
  const sys = items.filter((i) => i.loc === 'sys' || i.loc.startsWith('sys.')).map((i) => i.message.text);
  const first = items.find((i) => i.message.role === 'user');
  return fingerprintText(sys, first?.message.text);
}

/** The fingerprint of system prompt texts and the first user item's text (see fingerprintOf). */
export function fingerprintText(system: readonly string[], firstUser: string | undefined): string {
  return `${system.join('\n')}\u0000${firstUser ?? ''}`;
}
