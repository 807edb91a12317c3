/**
 * The benches' JIT warm-ups warm V8, not the daemon's content-keyed caches: what they append is
 * never a text the measured runs append, and in `bench latency` no two sessions append the same
 * text (token counts and derived data are cached by text, so a shared text would make the
 * measured appends cheaper than new text is in a running daemon).
 */
import { describe, expect, it } from 'vitest';
import { WARM_ROUNDS, appendSource, roundAppend, sessionMark } from '../../src/bench/latency.js';
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
  it('bench latency: appends marked for different sessions (warm-up or measured) share no text', () => {
    const extra = appendSource();
    // the phases' marks, as the bench gives them to its sessions: each its own
    const marks = ['warm-up', 'at once', 'staggered 0', 'staggered 1'].flatMap((phase) => Array.from({ length: 100 }, (_, i) => sessionMark(phase, i)));
    expect(new Set(marks).size).toBe(marks.length);
    const seen = new Map<string, string>();
    const shared: string[] = [];
    // every round a run can make (the appends cycle through the source's pairs)
    for (let k = 0; k < Math.max(extra.length, WARM_ROUNDS); k++) {
      const lines = marks.map((m) => roundAppend(extra, k, m).trim().split('\n'));
      // the same shape whatever the mark: one tool call and its result
      for (const l of lines) expect(l).toHaveLength(2);
      for (const m of marks) {
        for (const t of textsOf(roundAppend(extra, k, m))) {
          const other = seen.get(t);
          if (t.length >= MIN_CACHED_CHARS && other !== undefined && other !== m) shared.push(`${m} / ${other}: ${t.slice(0, 40)}`);
          seen.set(t, m);
        }
      }
    }
    expect(shared).toEqual([]);
    // and without the marks they would: the test can fail
    expect(textsOf(roundAppend(extra, 0, 'a')).map((t) => t.replace('(a round 0)\n', ''))).toContain(extra[1]?.content);
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
