/**
 * The benches' JIT warm-ups warm V8, not the daemon's content-keyed caches: what they append is
 * never a text the measured runs append (token counts and derived data are cached by text, so a
 * shared text would make the measured appends cheaper than new text is in a running daemon).
 */
import { describe, expect, it } from 'vitest';
import { WARM_ROUNDS, appendSource, roundAppend } from '../../src/bench/latency.js';
import { WARM_REPLANS, appendedLine } from '../../src/bench/plan.js';
import { MIN_CACHED_CHARS } from '../../src/model/tokens.js';

/** The texts of an append's lines that a content-keyed cache would hold. */
function textsOf(append: string): string[] {
  return append
    .trim()
    .split('\n')
    .flatMap((line) => {
      const l = JSON.parse(line) as { content: string; tool_calls?: { function: { arguments: string } }[] };
      return [l.content, ...(l.tool_calls ?? []).map((t) => t.function.arguments)];
    });
}

describe('bench warm-ups', () => {
  it('bench latency: no warm-up append brings a text a measured append brings', () => {
    const extra = appendSource();
    const measured = new Set<string>();
    // every round a measured run can make (the appends cycle through the source's pairs)
    for (let k = 0; k < extra.length; k++) for (const t of textsOf(roundAppend(extra, k))) measured.add(t);
    const shared: string[] = [];
    for (let k = 0; k < WARM_ROUNDS; k++) {
      const warm = roundAppend(extra, k, true);
      // the same shape as a measured append: one tool call and its result
      expect(warm.trim().split('\n')).toHaveLength(roundAppend(extra, k).trim().split('\n').length);
      for (const t of textsOf(warm)) if (t.length >= MIN_CACHED_CHARS && measured.has(t)) shared.push(t.slice(0, 40));
    }
    expect(shared).toEqual([]);
  });

  it('bench plan: no warm-up re-plan appends the line of a measured re-plan', () => {
    const measured = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const e = appendedLine(`appended-${i}`, i);
      if (e.type === 'message') measured.add(e.message.text);
    }
    for (let i = 0; i < WARM_REPLANS; i++) {
      const e = appendedLine(`warm-${i}`, i, true);
      expect(e.type).toBe('message');
      if (e.type === 'message') expect(measured.has(e.message.text), e.message.text).toBe(false);
    }
  });
});
