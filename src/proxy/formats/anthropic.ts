/**
 * Anthropic Messages API (`POST /v1/messages`): `system` (string or text blocks), `tools`,
 * and `messages` whose content is a string or blocks (text, image, document, thinking,
 * redacted_thinking, tool_use, tool_result). Every block is one item.
 *
 * Rendering keeps what the API insists on: no empty message, a tool_use answered by a
 * tool_result in the very next user message, tool_result blocks first in a user message.
 * Messages left empty by a plan go; neighbours of one role are merged (the API would merge
 * them anyway), so the result stays byte-identical for the same edits.
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

function blockMessage(id: string, role: 'user' | 'assistant', block: JsonObject): Message {
  switch (block['type']) {
    case 'text': {
      const text = str(block['text']) ?? '';
      return { id, role, text, ...(role === 'user' && looksInjected(text) ? { injected: true } : {}) };
    }
    case 'thinking':
      return { id, role: 'assistant', text: '', reasoning: str(block['thinking']) ?? '' };
    case 'redacted_thinking':
      return { id, role: 'assistant', text: '', imageCount: 1 };
    case 'tool_use':
      return { id, role: 'assistant', text: '', toolCalls: [{ id: str(block['id']) ?? id, name: str(block['name']) ?? 'tool', arguments: JSON.stringify(block['input'] ?? {}) }] };
    case 'server_tool_use':
      return { id, role: 'assistant', text: JSON.stringify(block['input'] ?? {}) };
    case 'tool_result': {
      const content = block['content'];
      return {
        id,
        role: 'tool',
        text: textOfContent(content),
        toolCallId: str(block['tool_use_id']) ?? '',
        ...(block['is_error'] === true ? { isError: true } : {}),
        ...(imagesIn(content) > 0 ? { imageCount: imagesIn(content) } : {}),
      };
    }
    case 'image':
    case 'document':
      return { id, role, text: '', imageCount: 1 };
    default:
      // web_search_tool_result and future kinds: modelled by their JSON text
      return { id, role, text: JSON.stringify(block) };
  }
}

function parse(body: JsonObject): ParsedRequest {
  const chain = new IdChain();
  const items: RequestItem[] = [];
  const system = body['system'];
  if (typeof system === 'string' ? system.length > 0 : Array.isArray(system) && system.length > 0) {
    items.push({ loc: 'sys', message: { id: chain.next(system), role: 'system', text: textOfContent(system) } });
  }
  const tools = body['tools'];
  if (Array.isArray(tools) && tools.length > 0) items.push({ loc: 'tools', message: { id: chain.next(tools), role: 'system', text: JSON.stringify(tools) } });
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  messages.forEach((m, i) => {
    if (!isObject(m)) return;
    const role = m['role'] === 'assistant' ? 'assistant' : 'user';
    const content = m['content'];
    if (typeof content === 'string') {
      const text = content;
      items.push({ loc: `${i}`, message: { id: chain.next({ role, content }), role, text, ...(role === 'user' && looksInjected(text) ? { injected: true } : {}) } });
      return;
    }
    if (!Array.isArray(content)) return;
    content.forEach((b, j) => {
      if (!isObject(b)) return;
      items.push({ loc: `${i}.${j}`, message: blockMessage(chain.next({ role, b }), role, b) });
    });
  });
  const items2 = items;
  return {
    format: 'anthropic',
    model: str(body['model']),
    stream: body['stream'] === true,
    items: items2,
    protectedFrom: protectedFromOf(items2),
    fingerprint: fingerprintOf(items2),
  };
}

function fingerprint(body: JsonObject): string {
  const system = body['system'];
  const sys = (typeof system === 'string' ? system.length > 0 : Array.isArray(system) && system.length > 0) ? [textOfContent(system)] : [];
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  for (const m of messages) {
    if (!isObject(m) || m['role'] === 'assistant') continue;
    const content = m['content'];
    if (typeof content === 'string') return fingerprintText(sys, content);
    if (!Array.isArray(content)) continue;
    for (const b of content) {
      if (!isObject(b)) continue;
      const msg = blockMessage('', 'user', b);
      if (msg.role === 'user') return fingerprintText(sys, msg.text);
    }
  }
  return fingerprintText(sys, undefined);
}

type Block = JsonObject;
interface OutMessage {
  role: 'user' | 'assistant';
  /** String content kept as the agent wrote it, else blocks. */
  content: string | Block[];
  /** Other fields of the message (kept). */
  rest: JsonObject;
}

function render(body: JsonObject, edits: ReadonlyMap<string, ItemEdit>): JsonObject {
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  const out: OutMessage[] = [];
  messages.forEach((m, i) => {
    if (!isObject(m)) return;
    const { role: rawRole, content, ...rest } = m;
    const role = rawRole === 'assistant' ? 'assistant' : 'user';
    if (typeof content === 'string') {
      const e = edits.get(`${i}`);
      if (!e) out.push({ role, content, rest });
      else if (e.insert) out.push({ role, content: e.insert.text, rest });
      else if (!e.drop) out.push({ role, content, rest });
      return;
    }
    if (!Array.isArray(content)) {
      out.push({ role, content: content as Block[], rest });
      return;
    }
    const blocks: Block[] = [];
    content.forEach((b, j) => {
      const e = edits.get(`${i}.${j}`);
      if (e?.insert) blocks.push({ type: 'text', text: e.insert.text });
      if (!e?.drop) blocks.push(b as Block);
    });
    if (blocks.length > 0) out.push({ role, content: blocks, rest });
  });
  const merged: OutMessage[] = [];
  for (const m of out) {
    const last = merged[merged.length - 1];
    if (last && last.role === m.role) {
      last.content = [...asBlocks(last.content), ...asBlocks(m.content)];
      continue;
    }
    merged.push({ ...m });
  }
  for (const m of merged) if (m.role === 'user' && Array.isArray(m.content)) m.content = toolResultsFirst(m.content);
  return { ...body, messages: merged.map((m) => ({ role: m.role, content: m.content, ...m.rest })) };
}

function asBlocks(content: string | Block[]): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function toolResultsFirst(blocks: Block[]): Block[] {
  const results = blocks.filter((b) => isObject(b) && b['type'] === 'tool_result');
  if (results.length === 0 || results.length === blocks.length) return blocks;
  return [...results, ...blocks.filter((b) => !(isObject(b) && b['type'] === 'tool_result'))];
}

export const anthropicFormat: ProviderFormat = { name: 'anthropic', parse, fingerprint, render };
