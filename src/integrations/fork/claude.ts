/**
 * Write a fork layout as a Claude Code session file: one line per message with a fresh
 * `sessionId`, `uuid`s chained through `parentUuid` from a null root, tool calls as
 * `tool_use` blocks answered by `tool_result` blocks, summaries as user text quoting their
 * recall handle. Harness-injected text and hidden reasoning are left out: Claude Code
 * re-injects the former on resume, and thinking blocks cannot be re-signed.
 */
import { randomUUID } from 'node:crypto';
import type { Message } from '../../model/messages.js';
import type { ForkLayout } from './plan.js';

type Json = Record<string, unknown>;

function toolInput(args: string): unknown {
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === 'object' && v !== null ? v : { input: v };
  } catch {
    return { input: args };
  }
}

/** Content and line type for one message, or undefined for what the fork leaves out. */
function claudeContent(m: Message): { type: 'user' | 'assistant'; content: unknown } | undefined {
  if (m.injected || m.role === 'system') return undefined;
  if (m.role === 'tool') return { type: 'user', content: [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.text, is_error: m.isError === true }] };
  if (m.role === 'assistant') {
    const blocks: Json[] = [];
    if (m.text.trim()) blocks.push({ type: 'text', text: m.text });
    for (const c of m.toolCalls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: toolInput(c.arguments) });
    return blocks.length > 0 ? { type: 'assistant', content: blocks } : undefined;
  }
  return m.text.trim() ? { type: 'user', content: m.text } : undefined;
}

/** The lines of the forked Claude Code session `newSessionId`. */
export function claudeForkLines(layout: ForkLayout, newSessionId: string, now: Date = new Date()): string[] {
  const lines: string[] = [];
  let parent: string | null = null;
  let n = 0;
  const cwd = layout.meta.cwd ?? process.cwd();
  const push = (type: 'user' | 'assistant', content: unknown): void => {
    const uuid = randomUUID();
    const timestamp = new Date(now.getTime() + n).toISOString();
    const message: Json =
      type === 'assistant'
        ? { id: `msg_contextd_fork_${n}`, type: 'message', role: 'assistant', model: layout.meta.model ?? 'unknown', content, stop_reason: (content as Json[]).some((b) => b['type'] === 'tool_use') ? 'tool_use' : 'end_turn', stop_sequence: null }
        : { role: 'user', content };
    lines.push(JSON.stringify({ parentUuid: parent, isSidechain: false, userType: 'external', cwd, sessionId: newSessionId, type, message, uuid, timestamp }));
    parent = uuid;
    n++;
  };
  for (const e of layout.entries) {
    if (e.kind === 'summary') {
      push(e.edit.summary.role === 'assistant' ? 'assistant' : 'user', e.edit.summary.role === 'assistant' ? [{ type: 'text', text: e.edit.summary.content }] : e.edit.summary.content);
      continue;
    }
    const c = claudeContent(e.message);
    if (c) push(c.type, c.content);
  }
  return lines;
}

/** A new Claude Code session id. */
export function newClaudeSessionId(): string {
  return randomUUID();
}
