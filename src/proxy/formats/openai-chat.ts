/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`): `messages` of role system /
 * developer / user / assistant / tool, assistant `tool_calls`, and `tools`. A message's
 * content is one item (`i.c`), each tool call another (`i.t<k>`), a tool message one (`i`).
 *
 * Rendering: a dropped tool call leaves its assistant message, a dropped result its tool
 * message; an assistant message left with neither content nor calls goes. A summary becomes
 * the content of the message where the first replaced item was.
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

function parse(body: JsonObject): ParsedRequest {
  const chain = new IdChain();
  const items: RequestItem[] = [];
  const tools = body['tools'];
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  let toolsPlaced = false;
  const placeTools = (): void => {
    if (toolsPlaced) return;
    toolsPlaced = true;
    if (Array.isArray(tools) && tools.length > 0) items.push({ loc: 'tools', message: { id: chain.next(tools), role: 'system', text: JSON.stringify(tools) } });
  };
  messages.forEach((m, i) => {
    if (!isObject(m)) return;
    const role = str(m['role']) ?? 'user';
    const content = m['content'];
    if (role === 'system' || role === 'developer') {
      items.push({ loc: `sys.${i}`, message: { id: chain.next(m), role: 'system', text: textOfContent(content) } });
      return;
    }
    placeTools();
    if (role === 'tool') {
      items.push({ loc: `${i}`, message: { id: chain.next(m), role: 'tool', text: textOfContent(content), toolCallId: str(m['tool_call_id']) ?? '' } });
      return;
    }
    const r = role === 'assistant' ? 'assistant' : 'user';
    const text = textOfContent(content);
    const images = imagesIn(content);
    const reasoning = str(m['reasoning']) ?? str(m['reasoning_content']);
    if (text.length > 0 || images > 0 || reasoning || !Array.isArray(m['tool_calls'])) {
      const msg: Message = {
        id: chain.next({ role, content, reasoning }),
        role: r,
        text,
        ...(reasoning ? { reasoning } : {}),
        ...(images > 0 ? { imageCount: images } : {}),
        ...(r === 'user' && looksInjected(text) ? { injected: true } : {}),
      };
      items.push({ loc: `${i}.c`, message: msg });
    }
    const calls = Array.isArray(m['tool_calls']) ? m['tool_calls'] : [];
    calls.forEach((c, k) => {
      if (!isObject(c)) return;
      const fn = isObject(c['function']) ? c['function'] : {};
      const id = chain.next(c);
      items.push({ loc: `${i}.t${k}`, message: { id, role: 'assistant', text: '', toolCalls: [{ id: str(c['id']) ?? id, name: str(fn['name']) ?? 'tool', arguments: str(fn['arguments']) ?? '' }] } });
    });
  });
  placeTools();
  return { format: 'openai-chat', model: str(body['model']), stream: body['stream'] === true, items, protectedFrom: protectedFromOf(items), fingerprint: fingerprintOf(items) };
}

function fingerprint(body: JsonObject): string {
  const sys: string[] = [];
  let first: string | undefined;
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = str(m['role']) ?? 'user';
    const content = m['content'];
    if (role === 'system' || role === 'developer') sys.push(textOfContent(content));
    else if (first === undefined && role !== 'tool' && role !== 'assistant') {
      const text = textOfContent(content);
      const reasoning = str(m['reasoning']) ?? str(m['reasoning_content']);
      if (text.length > 0 || imagesIn(content) > 0 || reasoning || !Array.isArray(m['tool_calls'])) first = text;
    }
  }
  return fingerprintText(sys, first);
}

function render(body: JsonObject, edits: ReadonlyMap<string, ItemEdit>): JsonObject {
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  const out: unknown[] = [];
  messages.forEach((m, i) => {
    if (!isObject(m)) {
      out.push(m);
      return;
    }
    const role = str(m['role']);
    if (role === 'tool') {
      const e = edits.get(`${i}`);
      if (e?.insert) out.push({ role: e.insert.role, content: e.insert.text });
      if (!e?.drop) out.push(m);
      return;
    }
    if (role === 'system' || role === 'developer' || role !== 'assistant' && role !== 'user' && role !== undefined) {
      out.push(m);
      return;
    }
    const next: JsonObject = { ...m };
    const c = edits.get(`${i}.c`);
    const inserts: string[] = [];
    if (c?.insert) inserts.push(c.insert.text);
    let contentDropped = c?.drop === true;
    const calls = Array.isArray(m['tool_calls']) ? m['tool_calls'] : undefined;
    if (calls) {
      const kept = calls.filter((_, k) => {
        const e = edits.get(`${i}.t${k}`);
        if (e?.insert) inserts.push(e.insert.text);
        return !e?.drop;
      });
      if (kept.length > 0) next['tool_calls'] = kept;
      else delete next['tool_calls'];
    }
    if (inserts.length > 0) {
      const kept = contentDropped ? '' : textOfContent(m['content']);
      next['content'] = [kept, ...inserts].filter((t) => t.length > 0).join('\n\n');
      contentDropped = false;
    } else if (contentDropped) {
      next['content'] = role === 'assistant' ? null : '';
    }
    const empty = (next['content'] === null || next['content'] === '' || next['content'] === undefined) && !Array.isArray(next['tool_calls']);
    if (!empty) out.push(next);
  });
  return { ...body, messages: out };
}

export const openaiChatFormat: ProviderFormat = { name: 'openai-chat', parse, fingerprint, render };
