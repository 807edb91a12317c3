/**
 * OpenAI chat-completions JSONL, one message per line (`{role, content, tool_calls?,
 * tool_call_id?, name?}`), including NousResearch hermes-agent gateway transcripts
 * (`timestamp` without zone, `reasoning`, `finish_reason`, `session_meta` pseudo-role), and
 * the one-conversation-per-line form `{"messages":[...]}`.
 *
 * Decisions:
 * - `session_meta` is not a message. It yields `meta` (model), and the first one carrying
 *   `tools` yields ONE system message holding the tool definitions as compact JSON: the
 *   schemas are sent with every request, so they are real context tokens. Later
 *   `session_meta` lines only update meta.
 * - A `{"messages":[...]}` line replaces the conversation: `reset`, then its messages with
 *   ids `L<offset>#<index>`.
 * - Tool errors: JSON content with a non-empty `"error"`, `"success": false` or a non-zero
 *   `exit_code`; plain text starting with `Error:`.
 * - Message ids are `L<byteOffset>`.
 */
import { createHash } from 'node:crypto';
import type { TranscriptAdapter } from '../types.js';
import type { Message, Role, ToolCall, TranscriptEvent } from '../../model/messages.js';
import { argsString, arr, isObject, jsonExitCode, jsonResultFailed, obj, parseTimestamp, partsText, str, textResultFailed, tryJson, type JsonObject, withSourceOffset } from './common.js';

const COMPACTION_PREFIX = '[CONTEXT COMPACTION';
const INJECTED_USER_PREFIXES = ['[The user sent an image', '[The user sent a voice', '[The user sent a file', '[SYSTEM:'];

const ROLE_MAP: Readonly<Record<string, Role>> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
  tool: 'tool',
  function: 'tool',
};

/** Short tool definitions (name, description, parameters) as one JSON text. */
function toolsText(tools: readonly unknown[]): string {
  const defs = tools.map((t) => {
    const o = obj(t);
    const fn = obj(o?.['function']) ?? o;
    return {
      name: str(fn?.['name']),
      description: str(fn?.['description']),
      parameters: fn?.['parameters'],
    };
  });
  return argsString(defs);
}

class OpenAIChatAdapter implements TranscriptAdapter {
  readonly format = 'openai-chat' as const;

  private readonly callNames = new Map<string, string>();
  private toolsEmitted = false;
  private model: string | undefined;

  parseLine(value: JsonObject, sourceOffset: number): TranscriptEvent[] {
    return withSourceOffset(this.parse(value, sourceOffset), sourceOffset);
  }

  private parse(value: JsonObject, sourceOffset: number): TranscriptEvent[] {
    const out: TranscriptEvent[] = [];
    const messages = arr(value['messages']);
    if (messages !== undefined && value['role'] === undefined) {
      this.metaFrom(value, out);
      out.push({ type: 'reset', reason: 'conversation' });
      messages.forEach((m, i) => {
        const o = obj(m);
        if (o) this.onMessage(o, `L${sourceOffset}#${i}`, out);
      });
      return out;
    }
    const role = str(value['role']);
    if (role === 'session_meta') {
      this.metaFrom(value, out);
      const tools = arr(value['tools']);
      if (tools !== undefined && tools.length > 0 && !this.toolsEmitted) {
        this.toolsEmitted = true;
        const timestamp = parseTimestamp(value['timestamp']);
        out.push({
          type: 'message',
          message: { id: `L${sourceOffset}`, role: 'system', text: toolsText(tools), injected: true, ...(timestamp !== undefined ? { timestamp } : {}) },
        });
      }
      return out;
    }
    if (role === undefined) {
      out.push({ type: 'unknown', lineType: str(value['type']) ?? 'no-role' });
      return out;
    }
    if (ROLE_MAP[role] === undefined) {
      out.push({ type: 'unknown', lineType: `role:${role}` });
      return out;
    }
    this.onMessage(value, `L${sourceOffset}`, out);
    return out;
  }

  private metaFrom(value: JsonObject, out: TranscriptEvent[]): void {
    const model = str(value['model']);
    if (model === undefined || model === this.model) return;
    this.model = model;
    out.push({ type: 'meta', meta: { model } });
  }

  /** One message entry as events (for `normalizeOpenAIMessages`). */
  onMessageOf(m: JsonObject, id: string, out: TranscriptEvent[]): void {
    this.onMessage(m, id, out);
  }

  private onMessage(m: JsonObject, id: string, out: TranscriptEvent[]): void {
    const rawRole = str(m['role']);
    const role = rawRole !== undefined ? ROLE_MAP[rawRole] : undefined;
    if (role === undefined) {
      out.push({ type: 'unknown', lineType: `role:${rawRole ?? 'none'}` });
      return;
    }
    const { text, imageCount } = partsText(m['content']);
    const timestamp = parseTimestamp(m['timestamp']);
    const base: { -readonly [K in keyof Message]?: Message[K] } = {};
    if (imageCount > 0) base.imageCount = imageCount;
    if (timestamp !== undefined) base.timestamp = timestamp;
    if (text.trimStart().startsWith(COMPACTION_PREFIX)) base.isSummary = true;

    if (role === 'assistant') {
      const reasoning = str(m['reasoning']) ?? str(m['reasoning_content']);
      if (reasoning !== undefined && reasoning.length > 0) base.reasoning = reasoning;
      const calls: ToolCall[] = [];
      for (const raw of arr(m['tool_calls']) ?? []) {
        const c = obj(raw);
        const fn = obj(c?.['function']);
        const callId = str(c?.['id']) ?? str(c?.['call_id']);
        if (callId === undefined) continue;
        const name = str(fn?.['name']) ?? str(c?.['name']) ?? 'unknown';
        this.callNames.set(callId, name);
        calls.push({ id: callId, name, arguments: argsString(fn?.['arguments'] ?? c?.['arguments']) });
      }
      if (calls.length > 0) base.toolCalls = calls;
      const model = str(m['model']) ?? this.model;
      if (model !== undefined) base.model = model;
    } else if (role === 'tool') {
      const callId = str(m['tool_call_id']);
      if (callId !== undefined) base.toolCallId = callId;
      const name = str(m['name']) ?? (callId !== undefined ? this.callNames.get(callId) : undefined);
      if (name !== undefined) base.toolName = name;
      const j = tryJson(text);
      if (isObject(j) ? jsonResultFailed(j) : textResultFailed(text)) base.isError = true;
      const exitCode = isObject(j) ? jsonExitCode(j) : undefined;
      if (exitCode !== undefined) base.exitCode = exitCode;
    } else if (role === 'user' && base.isSummary !== true) {
      const t = text.trimStart();
      if (INJECTED_USER_PREFIXES.some((p) => t.startsWith(p))) base.injected = true;
    }

    const empty = text.length === 0 && base.reasoning === undefined && base.toolCalls === undefined && base.imageCount === undefined && role !== 'tool';
    if (!empty) out.push({ type: 'message', message: { ...base, id, role, text } });
    if (role === 'assistant' && m['finish_reason'] === 'stop') {
      out.push(timestamp !== undefined ? { type: 'turn-end', timestamp } : { type: 'turn-end' });
    }
  }
}

/** A fresh, stateful OpenAI-chat / hermes adapter for one file. */
export function createOpenAIChatAdapter(): TranscriptAdapter {
  return new OpenAIChatAdapter();
}

/**
 * Normalize a message list an agent hands over directly (`session.sync`): exactly one message
 * per entry, in order, so the indexes of later plans are indexes into the agent's own list.
 * Entries the transcript reader would skip as empty are kept with empty text. Ids are content
 * hashes (`c_` + 16 hex, `#n` for the n-th repeat), stable when the list is sent again with
 * more messages. `isSummary: true` on an entry marks a summary the agent put in earlier.
 * Throws a RangeError naming the index of an entry whose role is not an OpenAI chat role.
 */
export function normalizeOpenAIMessages(list: readonly JsonObject[]): Message[] {
  const adapter = new OpenAIChatAdapter();
  const seen = new Map<string, number>();
  return list.map((entry, i) => {
    try {
      return normalizedMessage(adapter, seen, entry, i);
    } catch (err) {
      // JSON nested tens of thousands deep overflows the stack of anything that walks it
      if (err instanceof RangeError && /call stack/i.test(err.message)) throw new RangeError(`messages.${i}: nested too deeply to read`);
      throw err;
    }
  });
}

/** One message of `normalizeOpenAIMessages` (`seen`: how often each digest came before). */
function normalizedMessage(adapter: OpenAIChatAdapter, seen: Map<string, number>, entry: JsonObject, i: number): Message {
  const role = ROLE_MAP[str(entry['role']) ?? ''];
  if (role === undefined || str(entry['role']) === 'session_meta') throw new RangeError(`messages.${i}.role: expected system, developer, user, assistant or tool, got ${JSON.stringify(entry['role'])}`);
  const digest = createHash('sha256')
    .update(JSON.stringify([entry['role'], entry['content'] ?? null, entry['tool_calls'] ?? null, entry['tool_call_id'] ?? null, entry['name'] ?? null]))
    .digest('hex')
    .slice(0, 16);
  const n = seen.get(digest) ?? 0;
  seen.set(digest, n + 1);
  const id = n === 0 ? `c_${digest}` : `c_${digest}#${n}`;
  const out: TranscriptEvent[] = [];
  adapter.onMessageOf(entry, id, out);
  const found = out.find((e): e is Extract<TranscriptEvent, { type: 'message' }> => e.type === 'message');
  const message: Message = found ? found.message : { id, role, text: '' };
  return entry['isSummary'] === true ? { ...message, isSummary: true } : message;
}
