/**
 * The OpenAI Responses API as the scripted model server speaks it (streaming only, which is
 * what Codex uses): reading `input`, validating call/output pairing the way the real API does,
 * and rendering the SSE stream (`response.created`, `response.output_item.added/done`,
 * `response.output_text.delta`, `response.function_call_arguments.delta`, `response.completed`).
 */
import type { Cursor, Step } from './script.js';
import { stepCallId } from './script.js';
import { textOf, type ConversationEnd } from './conversation.js';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function items(body: Json): Json[] {
  return Array.isArray(body['input']) ? body['input'].filter(isObj) : [];
}

const CALL_TYPES = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);
const OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

/**
 * The real API's pairing rule (without `previous_response_id`): every tool output names a call
 * earlier in `input`, and every call has an output. Returns the 400 message or undefined.
 */
export function responsesPairingError(body: Json): string | undefined {
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const it of items(body)) {
    const id = String(it['call_id'] ?? '');
    if (CALL_TYPES.has(String(it['type']))) calls.add(id);
    else if (OUTPUT_TYPES.has(String(it['type']))) {
      if (!calls.has(id)) return `No tool call found for function call output with call_id ${id}.`;
      answered.add(id);
    }
  }
  const missing = [...calls].filter((c) => !answered.has(c));
  if (missing.length > 0) return `No tool output found for function call ${missing.join(', ')}.`;
  return undefined;
}

/** How a Responses request's `input` ends. */
export function responsesConversationEnd(body: Json): ConversationEnd {
  const last = items(body).at(-1);
  if (!last) return { kind: 'none' };
  if (OUTPUT_TYPES.has(String(last['type']))) return { kind: 'tool-result', callId: String(last['call_id']), text: textOf(last['output']) };
  if (last['type'] === 'message' && last['role'] === 'user') return { kind: 'prompt', text: textOf(last['content']) };
  return { kind: 'none' };
}

/** Names of the tools a Responses request offers. */
export function responsesToolNames(body: Json): string[] {
  return Array.isArray(body['tools']) ? body['tools'].filter(isObj).map((t) => String(t['name'] ?? t['type'])) : [];
}

function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function sedEscape(s: string, forReplacement: boolean): string {
  return forReplacement ? s.replace(/[\\/&]/g, '\\$&') : s.replace(/[\\/.*[\]^$]/g, '\\$&');
}

/** The shell command an abstract action becomes for an agent whose only tool is a shell. */
export function shellCommandOf(step: Step): string | undefined {
  const a = step.action;
  if (!a) return undefined;
  if (a.kind === 'shell') return a.command;
  if (a.kind === 'read') return `cat ${shq(a.path)}`;
  return `sed -i ${shq(`s/${sedEscape(a.oldText, false)}/${sedEscape(a.newText, true)}/`)} ${shq(a.path)}`;
}

/** A function-call item for Codex's shell tool, whichever shape the offered tool has. */
function shellCall(command: string, tools: readonly string[], callId: string): Json {
  if (tools.includes('exec_command')) return { type: 'function_call', name: 'exec_command', arguments: JSON.stringify({ cmd: command }), call_id: callId };
  if (tools.includes('shell_command')) return { type: 'function_call', name: 'shell_command', arguments: JSON.stringify({ command }), call_id: callId };
  return { type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', command] }), call_id: callId };
}

/** Output items for one scripted step. */
export function responsesOutput(step: Step, cursor: Cursor, n: number, tools: readonly string[]): Json[] {
  const out: Json[] = [];
  if (step.text) out.push({ type: 'message', id: `msg_${cursor.turn}_${cursor.step}_${n}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: step.text, annotations: [] }] });
  const command = shellCommandOf(step);
  if (command !== undefined) out.push({ id: `fc_${n}`, status: 'completed', ...shellCall(command, tools, stepCallId('call_', cursor, n)) });
  return out;
}

function sse(event: string, data: Json): string {
  return `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
}

/** The SSE stream of one response holding `output`. */
export function responsesSse(id: string, model: string, output: Json[], inputTokens: number, outputTokens: number): string {
  const base = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model };
  let seq = 0;
  let out = sse('response.created', { sequence_number: seq++, response: { ...base, status: 'in_progress', output: [] } });
  output.forEach((item, output_index) => {
    if (item['type'] === 'message') {
      const text = String((item['content'] as Json[])[0]?.['text'] ?? '');
      out += sse('response.output_item.added', { sequence_number: seq++, output_index, item: { ...item, status: 'in_progress', content: [] } });
      out += sse('response.content_part.added', { sequence_number: seq++, output_index, item_id: item['id'], content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      out += sse('response.output_text.delta', { sequence_number: seq++, output_index, item_id: item['id'], content_index: 0, delta: text });
      out += sse('response.output_text.done', { sequence_number: seq++, output_index, item_id: item['id'], content_index: 0, text });
      out += sse('response.content_part.done', { sequence_number: seq++, output_index, item_id: item['id'], content_index: 0, part: { type: 'output_text', text, annotations: [] } });
    } else {
      out += sse('response.output_item.added', { sequence_number: seq++, output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      out += sse('response.function_call_arguments.delta', { sequence_number: seq++, output_index, item_id: item['id'], delta: item['arguments'] });
      out += sse('response.function_call_arguments.done', { sequence_number: seq++, output_index, item_id: item['id'], arguments: item['arguments'] });
    }
    out += sse('response.output_item.done', { sequence_number: seq++, output_index, item });
  });
  const usage = { input_tokens: inputTokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: outputTokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: inputTokens + outputTokens };
  out += sse('response.completed', { sequence_number: seq++, response: { ...base, status: 'completed', output, usage } });
  return out;
}

/** The error body the real API returns. */
export function responsesError(message: string): Json {
  return { error: { message, type: 'invalid_request_error', param: 'input', code: null } };
}
