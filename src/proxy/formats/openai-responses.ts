/**
 * OpenAI Responses API (`POST /v1/responses`, what Codex CLI speaks): `instructions`,
 * `tools`, and `input` (a string, or items: messages, function_call / function_call_output,
 * custom_tool_call / custom_tool_call_output, reasoning, …). Every input item is one item.
 *
 * Rendering: dropped items go; a summary is a message item where the first replaced item
 * was. A reasoning item may not be sent without the item that followed it, so one whose
 * follower was dropped goes too.
 */
import type { Message } from '../../model/messages.js';
import {
  IdChain,
  fingerprintOf,
  fingerprintText,
  imagesIn,
  isObject,
  looksInjected,
  protectedFromOf,
  str,
  textOfContent,
  type ItemEdit,
  type JsonObject,
  type ParsedRequest,
  type ProviderFormat,
  type RequestItem,
} from '../request.js';

function itemMessage(id: string, it: JsonObject): Message {
  const type = str(it['type']) ?? 'message';
  switch (type) {
    case 'message': {
      const role = str(it['role']);
      const content = it['content'];
      const text = textOfContent(content);
      const images = imagesIn(content);
      if (role === 'system' || role === 'developer') return { id, role: 'system', text };
      const r = role === 'assistant' ? 'assistant' : 'user';
      return { id, role: r, text, ...(images > 0 ? { imageCount: images } : {}), ...(r === 'user' && looksInjected(text) ? { injected: true } : {}) };
    }
    case 'function_call':
    case 'custom_tool_call': {
      const args = str(it['arguments']) ?? str(it['input']) ?? '';
      return { id, role: 'assistant', text: '', toolCalls: [{ id: str(it['call_id']) ?? id, name: str(it['name']) ?? 'tool', arguments: args }] };
    }
    case 'function_call_output':
    case 'custom_tool_call_output': {
      const output = it['output'];
      return { id, role: 'tool', text: typeof output === 'string' ? output : textOfContent(output), toolCallId: str(it['call_id']) ?? '' };
    }
    case 'reasoning': {
      const summary = Array.isArray(it['summary']) ? textOfContent(it['summary']) : '';
      return { id, role: 'assistant', text: '', reasoning: summary, ...(it['encrypted_content'] ? { imageCount: 1 } : {}) };
    }
    default:
      return { id, role: 'assistant', text: JSON.stringify(it) };
  }
}

function parse(body: JsonObject): ParsedRequest {
  const chain = new IdChain();
  const items: RequestItem[] = [];
  const instructions = str(body['instructions']);
  if (instructions) items.push({ loc: 'sys', message: { id: chain.next(instructions), role: 'system', text: instructions } });
  const tools = body['tools'];
  if (Array.isArray(tools) && tools.length > 0) items.push({ loc: 'tools', message: { id: chain.next(tools), role: 'system', text: JSON.stringify(tools) } });
  const input = body['input'];
  if (typeof input === 'string') {
    items.push({ loc: 'input', message: { id: chain.next(input), role: 'user', text: input } });
  } else if (Array.isArray(input)) {
    input.forEach((it, i) => {
      if (isObject(it)) items.push({ loc: `${i}`, message: itemMessage(chain.next(it), it) });
    });
  }
  return { format: 'openai-responses', model: str(body['model']), stream: body['stream'] === true, items, protectedFrom: protectedFromOf(items), fingerprint: fingerprintOf(items) };
}

function fingerprint(body: JsonObject): string {
  const instructions = str(body['instructions']);
  const sys = instructions ? [instructions] : [];
  const input = body['input'];
  if (typeof input === 'string') return fingerprintText(sys, input);
  if (Array.isArray(input)) {
    for (const it of input) {
      if (!isObject(it) || (str(it['type']) ?? 'message') !== 'message') continue;
      const role = str(it['role']);
      if (role !== 'system' && role !== 'developer' && role !== 'assistant') return fingerprintText(sys, textOfContent(it['content']));
    }
  }
  return fingerprintText(sys, undefined);
}

function summaryItem(role: 'user' | 'assistant', text: string): JsonObject {
  return { type: 'message', role, content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text }] };
}

function render(body: JsonObject, edits: ReadonlyMap<string, ItemEdit>): JsonObject {
  const input = body['input'];
  if (!Array.isArray(input)) return { ...body };
  const dropped = (i: number): boolean => edits.get(`${i}`)?.drop === true;
  const out: unknown[] = [];
  input.forEach((it, i) => {
    const e = edits.get(`${i}`);
    if (e?.insert) out.push(summaryItem(e.insert.role, e.insert.text));
    if (e?.drop) return;
    if (isObject(it) && it['type'] === 'reasoning' && i + 1 < input.length && dropped(i + 1)) return;
    out.push(it);
  });
  return { ...body, input: out };
}

export const openaiResponsesFormat: ProviderFormat = { name: 'openai-responses', parse, fingerprint, render };
