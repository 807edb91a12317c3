/**
 * Write a fork layout as a Codex CLI rollout: a `session_meta` line with a new id and
 * `forked_from_id`, the source's last `turn_context`, then `response_item`s (messages,
 * `function_call` / `function_call_output` pairs by `call_id`) with summaries as user
 * messages quoting their recall handle. System and harness-injected items are left out:
 * Codex rebuilds its instructions and environment context on resume.
 */
import { randomBytes } from 'node:crypto';
import type { Message } from '../../model/messages.js';
import type { ForkLayout } from './plan.js';

type Json = Record<string, unknown>;

/** A UUIDv7 (time-ordered, as Codex's own thread ids). */
export function newCodexSessionId(now: Date = new Date()): string {
  const b = randomBytes(16);
  const ms = BigInt(now.getTime());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = 0x70 | ((b[6] ?? 0) & 0x0f);
  b[8] = 0x80 | ((b[8] ?? 0) & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The rollout file name Codex gives a session started at `now`. */
export function codexRolloutName(id: string, now: Date = new Date()): string {
  const ts = now.toISOString().slice(0, 19).replace(/:/g, '-');
  return `rollout-${ts}-${id}.jsonl`;
}

function items(m: Message): Json[] {
  if (m.injected || m.role === 'system') return [];
  if (m.role === 'tool') return [{ type: 'function_call_output', call_id: m.toolCallId ?? '', output: m.text }];
  if (m.role === 'assistant') {
    const out: Json[] = [];
    if (m.text.trim()) out.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: m.text }] });
    for (const c of m.toolCalls ?? []) out.push({ type: 'function_call', name: c.name, arguments: c.arguments, call_id: c.id });
    return out;
  }
  return m.text.trim() ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: m.text }] }] : [];
}

/**
 * The lines of the forked rollout. `sourceLines` are the source's parsed lines: its
 * session_meta and last turn_context are carried over (with the new id).
 */
export function codexForkLines(layout: ForkLayout, newId: string, sourceLines: readonly Json[], now: Date = new Date()): string[] {
  const at = now.toISOString();
  const meta = sourceLines.find((l) => l['type'] === 'session_meta');
  const turn = [...sourceLines].reverse().find((l) => l['type'] === 'turn_context');
  const source = (meta?.['payload'] as Json | undefined) ?? {};
  // forked_from_id must be a thread id (a UUID): Codex refuses the rollout otherwise.
  const from = typeof source['id'] === 'string' ? { forked_from_id: source['id'] } : {};
  const metaPayload = { ...source, id: newId, session_id: newId, timestamp: at, ...from };
  const lines: Json[] = [{ timestamp: at, type: 'session_meta', payload: metaPayload }];
  if (turn) lines.push({ timestamp: at, type: 'turn_context', payload: turn['payload'] });
  for (const e of layout.entries) {
    const payloads = e.kind === 'summary' ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: e.edit.summary.content }] }] : items(e.message);
    for (const p of payloads) lines.push({ timestamp: at, type: 'response_item', payload: p });
  }
  // 0.169 numbers every line (`ordinal`) and refuses a rollout whose first line lacks it.
  return lines.map((l, ordinal) => JSON.stringify({ timestamp: l['timestamp'], ordinal, type: l['type'], payload: l['payload'] }));
}
