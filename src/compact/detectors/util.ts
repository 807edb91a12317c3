/** Helpers shared by the detectors. */
import type { Message, ToolCall } from '../../model/messages.js';
import type { Section } from '../../model/types.js';
import type { DetectorContext } from '../types.js';
import { FNV32_OFFSET_BASIS, FNV32_PRIME, HASH52_SECOND_BASIS, isSpaceCode } from '../../text/index.js';
import { doubled } from '../../util/typed-arrays.js';

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

/** Set of trimmed non-empty lines (whitespace-normalized), for near-duplicate tests. */
export function lineSet(text: string): Set<string> {
  const out = new Set<string>();
  for (const l of text.split('\n')) {
    const trimmed = l.trim();
    // collapsing is the identity unless some whitespace run is not a single space
    const t = /\s\s|[^\S ]/.test(trimmed) ? trimmed.replace(/\s+/g, ' ') : trimmed;
    if (t.length > 0) out.add(t);
  }
  return out;
}

/** Scratch for `lineHashes` (grown as needed, never handed out). */
let scratch = new Float64Array(256);
/** Lines of scratch kept between calls (512 KiB). */
const MAX_KEPT_SCRATCH = 1 << 16;

/**
 * The `hash52` of each line of `lineSet(text)`, sorted and distinct, read in one pass over the
 * text without making a string per line: each line is hashed as it is normalized (trimmed,
 * whitespace runs as one space). Same values as `hash52` of the `lineSet` strings (a test pins
 * it); the line set of every tool output is taken on a cold plan.
 */
export function lineHashes(text: string): Float64Array {
  let n = 0;
  let i = 0;
  const end = text.length;
  while (i <= end) {
    let a = FNV32_OFFSET_BASIS | 0; // as an int32 (same bits): the loop stays on int32 arithmetic
    let b = HASH52_SECOND_BASIS;
    let started = false;
    let gap = false;
    for (; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c <= 32 || c >= 0xa0) {
        if (c === 10) break;
        if (isSpaceCode(c)) {
          gap = started;
          continue;
        }
      }
      if (gap) {
        a = Math.imul(a ^ 32, FNV32_PRIME);
        b = Math.imul(b ^ 32, FNV32_PRIME);
        gap = false;
      }
      a = Math.imul(a ^ c, FNV32_PRIME);
      b = Math.imul(b ^ c, FNV32_PRIME);
      started = true;
    }
    i++; // past the line break (or the end)
    if (!started) continue;
    if (n === scratch.length) scratch = doubled(scratch);
    scratch[n++] = (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
  }
  const out = scratch.slice(0, n).sort();
  // an output of very many lines does not keep its scratch for good
  if (scratch.length > MAX_KEPT_SCRATCH) scratch = new Float64Array(256);
  let k = 0;
  for (let j = 0; j < n; j++) if (j === 0 || out[j] !== out[k - 1]) out[k++] = out[j] as number;
  return k === n ? out : out.slice(0, k);
}
