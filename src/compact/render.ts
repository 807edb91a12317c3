/**
 * Turn the live context (and a set of replacements) into openai-chat messages, counting
 * tokens exactly as the model does (text + reasoning + tool names/arguments + per-message
 * overhead + image estimate). `repairPairs` drops what a chat API would reject: tool results
 * without their call, and calls without a result unless they are the pending tail.
 */
import type { Message } from '../model/messages.js';
import { IMAGE_TOKEN_ESTIMATE, MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from '../model/tokens.js';
import type { OpenAIChatMessage } from './types.js';

export interface Rendered {
  readonly chat: OpenAIChatMessage;
  readonly tokens: number;
}

/** Tokens of one source message, the model's formula. */
export function messageTokens(m: Message, counter: TokenCounter): number {
  let n = MESSAGE_OVERHEAD_TOKENS + (m.imageCount ?? 0) * IMAGE_TOKEN_ESTIMATE;
  if (m.text) n += counter.count(m.text);
  if (m.reasoning) n += counter.count(m.reasoning);
  for (const c of m.toolCalls ?? []) n += counter.count(c.name) + counter.count(c.arguments);
  return n;
}

/** One source message as openai-chat. */
export function toChat(m: Message): OpenAIChatMessage {
  const out: OpenAIChatMessage = { role: m.role, content: m.text };
  if (m.reasoning) out.reasoning = m.reasoning;
  if (m.toolCalls && m.toolCalls.length > 0) {
    out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
  }
  if (m.role === 'tool' && m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  return out;
}

/** Render a source message with its token count. */
export function renderMessage(m: Message, counter: TokenCounter): Rendered {
  return { chat: toChat(m), tokens: messageTokens(m, counter) };
}

/** Render a synthetic text message (summary, placeholder). */
export function renderText(role: OpenAIChatMessage['role'], content: string, counter: TokenCounter): Rendered {
  return { chat: { role, content }, tokens: MESSAGE_OVERHEAD_TOKENS + counter.count(content) };
}

/** Sum of tokens. */
export function totalTokens(rs: readonly Rendered[]): number {
  return rs.reduce((n, r) => n + r.tokens, 0);
}

/**
 * Remove orphans: a tool result whose call is not earlier in the output, and tool calls
 * with no result later in the output — except calls of a trailing assistant message that
 * only tool results follow (a call still pending at the end). Token counts are adjusted.
 */
export function repairPairs(rs: readonly Rendered[], counter: TokenCounter): Rendered[] {
  const answered = new Set<string>();
  for (const r of rs) if (r.chat.role === 'tool' && r.chat.tool_call_id !== undefined) answered.add(r.chat.tool_call_id);
  const called = new Set<string>();
  const out: Rendered[] = [];
  rs.forEach((r, i) => {
    const c = r.chat;
    if (c.role === 'tool') {
      if (c.tool_call_id === undefined || !called.has(c.tool_call_id)) return; // orphan result
      out.push(r);
      return;
    }
    if (c.tool_calls && c.tool_calls.length > 0) {
      const trailing = rs.slice(i + 1).every((x) => x.chat.role === 'tool');
      const keep = c.tool_calls.filter((tc) => answered.has(tc.id) || trailing);
      for (const tc of keep) called.add(tc.id);
      if (keep.length === c.tool_calls.length) {
        out.push(r);
        return;
      }
      const dropped = c.tool_calls.filter((tc) => !keep.includes(tc));
      const saved = dropped.reduce((n, tc) => n + counter.count(tc.function.name) + counter.count(tc.function.arguments), 0);
      const next: OpenAIChatMessage = { ...c };
      if (keep.length > 0) next.tool_calls = keep;
      else delete next.tool_calls;
      if (keep.length === 0 && next.content.trim() === '' && !next.reasoning) return;
      out.push({ chat: next, tokens: r.tokens - saved });
      return;
    }
    out.push(r);
  });
  return out;
}
