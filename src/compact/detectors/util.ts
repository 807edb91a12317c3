/** Helpers shared by the detectors. */
import type { Message, ToolCall } from '../../model/messages.js';
import type { Section } from '../../model/types.js';
import type { DetectorContext } from '../types.js';

/** A section the planner may replace: not an anchor, not a pending call, not the system prompt. */
export function isCompactable(s: Section): boolean {
  return !s.anchor && !s.pending && s.kind !== 'system';
}

/** Tool calls the section's messages request. */
export function callsOf(msgs: readonly Message[]): ToolCall[] {
  const out: ToolCall[] = [];
  for (const m of msgs) if (m.toolCalls) out.push(...m.toolCalls);
  return out;
}


/** All visible text of a section (text, reasoning, tool arguments). */
export function textOf(msgs: readonly Message[]): string {
  const parts: string[] = [];
  for (const m of msgs) {
    if (m.reasoning) parts.push(m.reasoning);
    if (m.text) parts.push(m.text);
    if (m.toolCalls) for (const c of m.toolCalls) parts.push(`${c.name} ${c.arguments}`);
  }
  // one part (most messages): itself, not a copy
  return parts.length === 1 ? (parts[0] as string) : parts.join('\n');
}

/** Cache messagesOf lookups for one detector run. */
export function memoMessages(ctx: DetectorContext): (s: Section) => readonly Message[] {
  const cache = new Map<string, readonly Message[]>();
  return (s) => {
    let v = cache.get(s.id);
    if (!v) {
      v = ctx.messagesOf(s.id);
      cache.set(s.id, v);
    }
    return v;
  };
}
