/**
 * The Anthropic Messages API as the scripted model server speaks it: reading a request,
 * validating tool pairing the way the real API does, and rendering a reply as one JSON body or
 * as the SSE event stream (`message_start`, `content_block_start/delta/stop`, `message_delta`,
 * `message_stop`).
 */
import { isAbsolute, join } from 'node:path';
import type { Cursor, Step } from './script.js';
import { stepCallId } from './script.js';
import { textOf, type ConversationEnd } from './conversation.js';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function blocks(content: unknown): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isObj) : [];
}

/**
 * The real API's pairing rule: every `tool_result` answers a `tool_use` of the message right
 * before it, and every `tool_use` is answered in the message right after it. Returns the 400
 * message, or undefined when the conversation is well formed.
 */
export function anthropicPairingError(all: readonly unknown[]): string | undefined {
  const messages = conversational(all);
  for (let i = 0; i < messages.length; i++) {
    const msg = messages[i];
    if (!isObj(msg)) return `messages.${i}: not an object`;
    const here = blocks(msg['content']);
    if (msg['role'] === 'user') {
      const prev = messages[i - 1];
      const offered = new Set(isObj(prev) && prev['role'] === 'assistant' ? blocks(prev['content']).filter((b) => b['type'] === 'tool_use').map((b) => String(b['id'])) : []);
      for (const [j, b] of here.entries()) {
        if (b['type'] === 'tool_result' && !offered.has(String(b['tool_use_id']))) {
          return `messages.${i}.content.${j}: unexpected tool_use_id in tool_result blocks: ${String(b['tool_use_id'])}; each tool_result needs a tool_use in the previous message`;
        }
      }
    } else if (msg['role'] === 'assistant') {
      const uses = here.filter((b) => b['type'] === 'tool_use').map((b) => String(b['id']));
      if (uses.length === 0) continue;
      const next = messages[i + 1];
      if (!isObj(next)) return `messages.${i}: tool_use ids without tool_result blocks after them: ${uses.join(', ')}`;
      const answered = new Set(blocks(next['content']).filter((b) => b['type'] === 'tool_result').map((b) => String(b['tool_use_id'])));
      const missing = uses.filter((u) => !answered.has(u));
      if (missing.length > 0) return `messages.${i}: tool_use ids without tool_result blocks right after them: ${missing.join(', ')}`;
    }
  }
  return undefined;
}

/**
 * The user/assistant turns of `messages`. Claude Code 2.1.x also sends `role: "system"` entries
 * inside `messages` (environment, reminders); they sit between turns and pair nothing.
 */
function conversational(messages: readonly unknown[]): unknown[] {
  return messages.filter((m) => !(isObj(m) && m['role'] === 'system'));
}

/** How an Anthropic request's conversation ends. */
export function anthropicConversationEnd(body: Json): ConversationEnd {
  const messages = conversational(Array.isArray(body['messages']) ? body['messages'] : []);
  const last = messages.at(-1);
  if (!isObj(last) || last['role'] !== 'user') return { kind: 'none' };
  const bs = blocks(last['content']);
  const results = bs.filter((b) => b['type'] === 'tool_result');
  const text = bs
    .filter((b) => b['type'] === 'text')
    .map((b) => String(b['text']))
    .join('\n');
  if (results.length > 0) return { kind: 'tool-result', callId: String(results.at(-1)?.['tool_use_id']), text };
  return { kind: 'prompt', text };
}

/** Names of the tools an Anthropic request offers. */
export function anthropicToolNames(body: Json): string[] {
  return Array.isArray(body['tools']) ? body['tools'].filter(isObj).map((t) => String(t['name'])) : [];
}

/** The system prompt's text. */
export function anthropicSystemText(body: Json): string {
  return textOf(body['system']);
}

/** Content blocks for one scripted step, with Claude Code's tool names and inputs. */
export function anthropicBlocks(step: Step, cursor: Cursor, n: number, workspace: string | undefined): Json[] {
  const out: Json[] = [];
  if (step.text) out.push({ type: 'text', text: step.text });
  const a = step.action;
  if (!a) return out;
  const abs = (p: string): string => (workspace && !isAbsolute(p) ? join(workspace, p) : p);
  const id = stepCallId('toolu_', cursor, n);
  if (a.kind === 'shell') out.push({ type: 'tool_use', id, name: 'Bash', input: { command: a.command, description: 'Run a scripted command' } });
  else if (a.kind === 'read') out.push({ type: 'tool_use', id, name: 'Read', input: { file_path: abs(a.path) } });
  else out.push({ type: 'tool_use', id, name: 'Edit', input: { file_path: abs(a.path), old_string: a.oldText, new_string: a.newText } });
  return out;
}

/** A whole Messages API response. */
export function anthropicMessage(id: string, model: string, content: Json[], inputTokens: number, outputTokens: number): Json {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: content.some((b) => b['type'] === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens },
  };
}

function sse(event: string, data: Json): string {
  return `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
}

/** The same response as the SSE stream the real API sends with `stream: true`. */
export function anthropicSse(message: Json): string {
  const content = (message['content'] as Json[]) ?? [];
  const usage = message['usage'] as Json;
  let out = sse('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
  content.forEach((b, index) => {
    if (b['type'] === 'tool_use') {
      out += sse('content_block_start', { index, content_block: { type: 'tool_use', id: b['id'], name: b['name'], input: {} } });
      const json = JSON.stringify(b['input']);
      const mid = Math.floor(json.length / 2);
      out += sse('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(0, mid) } });
      out += sse('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(mid) } });
    } else {
      const text = String(b['text'] ?? '');
      out += sse('content_block_start', { index, content_block: { type: 'text', text: '' } });
      out += sse('content_block_delta', { index, delta: { type: 'text_delta', text } });
    }
    out += sse('content_block_stop', { index });
  });
  out += sse('message_delta', { delta: { stop_reason: message['stop_reason'], stop_sequence: null }, usage: { output_tokens: usage['output_tokens'] } });
  out += sse('message_stop', {});
  return out;
}

/** The error body the real API returns. */
export function anthropicError(type: string, message: string): Json {
  return { type: 'error', error: { type, message } };
}
