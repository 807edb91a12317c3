/**
 * The opt-in `contextd_recall` tool (`proxy.recallTool`). The proxy offers it to the model in
 * every request that already offers tools, appended after the agent's own tools so the prefix
 * stays byte-identical from one request to the next. The model calls it with a handle quoted
 * in a summary (`[contextd recall h_…]`); the agent does not know the tool and answers the call
 * with its own error result (Claude Code: "No such tool available", Codex: "unsupported call").
 * On that request and every later one the proxy puts the archived originals in place of that
 * result's content. The model sees the real answer, no request goes upstream to get it, and
 * the rewrite is the same every time, so provider prompt caches keep hitting.
 *
 * Pure: the caller looks handles up (`RecallLookup`).
 */
import { isObject, str, type JsonObject, type ProviderFormatName } from './request.js';

export const RECALL_TOOL_NAME = 'contextd_recall';

const DESCRIPTION =
  'Recall the original messages that contextd replaced with a summary. Summaries quote a handle as [contextd recall h_…]; ' +
  'pass that handle (h_ followed by 16 hex digits) to get the originals back verbatim (secrets stay redacted).';
const HANDLE_DESCRIPTION = 'The handle quoted in the summary, e.g. h_0123456789abcdef';
const PARAMETERS = { type: 'object', properties: { handle: { type: 'string', description: HANDLE_DESCRIPTION } }, required: ['handle'] } as const;

/** The recall tool's definition in a format's `tools[]`. */
export function recallToolDefinition(format: ProviderFormatName): JsonObject {
  switch (format) {
    case 'anthropic':
      return { name: RECALL_TOOL_NAME, description: DESCRIPTION, input_schema: PARAMETERS };
    case 'openai-chat':
      return { type: 'function', function: { name: RECALL_TOOL_NAME, description: DESCRIPTION, parameters: PARAMETERS } };
    case 'openai-responses':
      return { type: 'function', name: RECALL_TOOL_NAME, description: DESCRIPTION, parameters: PARAMETERS, strict: false };
  }
}

/** The text answering a recall of `handle` (undefined: the model passed no handle at all). */
export type RecallLookup = (handle: string | undefined) => string;

/** What adding the tool and answering its calls did to one request. */
export interface RecallRewrite {
  readonly body: JsonObject;
  /** Calls of the tool in the request, answered by the proxy. */
  readonly answered: number;
  /** Handles the calls named (garbage included, as the model wrote them). */
  readonly handles: readonly (string | undefined)[];
}

/** The handle in a call's arguments (JSON text or an object), if it names one. */
export function handleOf(args: unknown): string | undefined {
  let v: unknown = args;
  if (typeof args === 'string') {
    try {
      v = JSON.parse(args);
    } catch {
      return undefined;
    }
  }
  return isObject(v) ? str(v['handle']) : undefined;
}

/**
 * The request with the recall tool offered (when it offers tools) and each call of the tool
 * answered with `lookup`. The input is not mutated. Requests without `tools` are returned as
 * they are: the agent expects no tool call from them.
 */
export function withRecall(format: ProviderFormatName, body: JsonObject, lookup: RecallLookup): RecallRewrite {
  const tools = body['tools'];
  if (!Array.isArray(tools) || tools.length === 0) return { body, answered: 0, handles: [] };
  const offered = tools.some((t) => toolName(t) === RECALL_TOOL_NAME);
  const out: JsonObject = { ...body, tools: offered ? tools : [...tools, recallToolDefinition(format)] };
  const handles: (string | undefined)[] = [];
  const answer = (h: string | undefined): string => {
    handles.push(h);
    return lookup(h);
  };
  if (format === 'anthropic') out['messages'] = answerAnthropic(body['messages'], answer);
  else if (format === 'openai-chat') out['messages'] = answerChat(body['messages'], answer);
  else out['input'] = answerResponses(body['input'], answer);
  return { body: out, answered: handles.length, handles };
}

function toolName(t: unknown): string | undefined {
  if (!isObject(t)) return undefined;
  return str(t['name']) ?? (isObject(t['function']) ? str(t['function']['name']) : undefined);
}

/** tool_use blocks of the tool → their handles; tool_result blocks answering them get the recall. */
function answerAnthropic(messages: unknown, answer: (h: string | undefined) => string): unknown {
  if (!Array.isArray(messages)) return messages;
  const calls = new Map<string, string | undefined>();
  for (const m of messages) {
    if (!isObject(m) || m['role'] !== 'assistant' || !Array.isArray(m['content'])) continue;
    for (const b of m['content']) if (isObject(b) && b['type'] === 'tool_use' && b['name'] === RECALL_TOOL_NAME) calls.set(str(b['id']) ?? '', handleOf(b['input']));
  }
  if (calls.size === 0) return messages;
  return messages.map((m) => {
    if (!isObject(m) || m['role'] !== 'user' || !Array.isArray(m['content'])) return m;
    const content = m['content'];
    if (!content.some((b) => isObject(b) && b['type'] === 'tool_result' && calls.has(str(b['tool_use_id']) ?? ''))) return m;
    return {
      ...m,
      content: content.map((b) => {
        if (!isObject(b) || b['type'] !== 'tool_result' || !calls.has(str(b['tool_use_id']) ?? '')) return b;
        const { is_error: _isError, content: _content, ...rest } = b;
        return { ...rest, content: answer(calls.get(str(b['tool_use_id']) ?? '')) };
      }),
    };
  });
}

function answerChat(messages: unknown, answer: (h: string | undefined) => string): unknown {
  if (!Array.isArray(messages)) return messages;
  const calls = new Map<string, string | undefined>();
  for (const m of messages) {
    if (!isObject(m) || m['role'] !== 'assistant' || !Array.isArray(m['tool_calls'])) continue;
    for (const c of m['tool_calls']) {
      const fn = isObject(c) && isObject(c['function']) ? c['function'] : undefined;
      if (isObject(c) && fn && fn['name'] === RECALL_TOOL_NAME) calls.set(str(c['id']) ?? '', handleOf(fn['arguments']));
    }
  }
  if (calls.size === 0) return messages;
  return messages.map((m) => (isObject(m) && m['role'] === 'tool' && calls.has(str(m['tool_call_id']) ?? '') ? { ...m, content: answer(calls.get(str(m['tool_call_id']) ?? '')) } : m));
}

function answerResponses(input: unknown, answer: (h: string | undefined) => string): unknown {
  if (!Array.isArray(input)) return input;
  const calls = new Map<string, string | undefined>();
  for (const it of input) if (isObject(it) && it['type'] === 'function_call' && it['name'] === RECALL_TOOL_NAME) calls.set(str(it['call_id']) ?? '', handleOf(it['arguments']));
  if (calls.size === 0) return input;
  return input.map((it) => (isObject(it) && it['type'] === 'function_call_output' && calls.has(str(it['call_id']) ?? '') ? { ...it, output: answer(calls.get(str(it['call_id']) ?? '')) } : it));
}

/**
 * `text` cut to at most `maxTokens` (whole text when it fits). Deterministic: the same text and
 * bound give the same cut, so a bounded answer is as cache-stable as a whole one.
 */
export function fitTokens(text: string, maxTokens: number, count: (t: string) => number): { text: string; tokens: number; truncated: boolean } {
  const tokens = count(text);
  if (tokens <= maxTokens) return { text, tokens, truncated: false };
  let cut = Math.floor((text.length * maxTokens) / tokens);
  let out = text.slice(0, cut);
  while (cut > 0 && count(out) > maxTokens) {
    cut = Math.floor(cut * 0.9);
    out = text.slice(0, cut);
  }
  return { text: out, tokens, truncated: true };
}
