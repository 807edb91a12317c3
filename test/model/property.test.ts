/**
 * Property: whatever sequence of appends, truncations and replacements a session sees, its incremental state
 * (tokens, term statistics, density links) equals that of a model built from scratch from the
 * resulting live messages.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { SessionModel, createTokenCounter, type Section } from '../../src/model/index.js';
import { asst, call, callMsg, prose, result, user } from './helpers.js';

const counter = createTokenCounter('o200k_base');
const OUTPUTS = [prose(1, 120), prose(2, 120), `${prose(1, 120)} tail`, 'WARN retry\n'.repeat(60), 'ok'];

type Op =
  | { kind: 'call'; tool: number; out: number; withResult: boolean }
  | { kind: 'text'; seed: number }
  | { kind: 'user'; seed: number }
  | { kind: 'truncate'; back: number }
  | { kind: 'replace'; count: number; seed: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('call' as const), tool: fc.nat(2), out: fc.nat(OUTPUTS.length - 1), withResult: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('text' as const), seed: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('user' as const), seed: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncate' as const), back: fc.nat(6) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replace' as const), count: fc.integer({ min: 1, max: 3 }), seed: fc.nat(1000) }) },
);

/**
 * Drops what legitimately differs in a rebuild: ids, and the density of
 * summaries (a contextd summary is newer than the sections after it, a rebuilt one is not).
 */
function strip(sections: readonly Section[]): unknown[] {
  return sections.map(({ id: _id, ...rest }) =>
    rest.kind === 'summary' ? { ...rest, density: 0, score: 0, factors: { ...rest.factors, density: 0, score: 0 } } : rest,
  );
}

describe('incremental state equals a rebuild', () => {
  it('holds for random appends, truncations and replacements', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
        const m = new SessionModel({ sessionId: 'P', tokenCounter: counter });
        m.apply(user('u0', 'watch the build and tail the logs'));
        let n = 0;
        ops.forEach((o, i) => {
          const events: TranscriptEvent[] = [];
          if (o.kind === 'call') {
            const id = `c${n++}`;
            events.push(callMsg(`a${id}`, [call(id, ['Bash', 'Read', 'Grep'][o.tool] as string, `{"n":${o.out}}`)]));
            if (o.withResult) events.push(result(`r${id}`, id, OUTPUTS[o.out] as string));
          } else if (o.kind === 'text') events.push(asst(`t${n++}`, prose(o.seed + 10, 30)));
          else if (o.kind === 'user') events.push(user(`u${n++}`, prose(o.seed + 20, 8)));
          else if (o.kind === 'truncate') {
            const live = m.messages();
            const keep = live[Math.max(0, live.length - 1 - o.back)];
            if (keep) events.push({ type: 'truncate', keepThroughId: keep.id, reason: 'rewind' });
          }
          if (o.kind === 'replace') {
            const victims = [...m.sections()]
              .filter((s) => !s.anchor && !s.pending)
              .sort((a, b) => a.score - b.score)
              .slice(0, o.count);
            if (victims.length > 0) {
              const before = m.tokens();
              const removed = victims.reduce((a, s) => a + s.tokens, 0);
              const sec = m.replaceSections(
                victims.map((v) => v.id),
                { text: `[contextd ${o.seed}] ${prose(o.seed, 6)}`, editId: `e${n++}`, handle: `h${o.seed}`, reason: 'low-score' },
              );
              expect(m.tokens()).toBe(before - removed + sec.tokens);
            }
          }
          m.applyAll(events);
          if (i % 3 === 0) m.sections(); // interleave lazy recomputes
        });
        const fresh = new SessionModel({ sessionId: 'P', tokenCounter: counter });
        fresh.applyAll(m.messages().map((message) => ({ type: 'message' as const, message })));
        expect(m.tokens()).toBe(fresh.tokens());
        expect(m.tokens()).toBe(m.sections().reduce((a, s) => a + s.tokens, 0));
        expect(strip(m.sections())).toEqual(strip(fresh.sections()));
      }),
      { numRuns: 150, seed: 42 },
    );
  });
});

describe('density after replacement', () => {
  it('an older copy stays redundant while any newer copy is live', () => {
    const m = new SessionModel({ sessionId: 'D', tokenCounter: counter });
    const out = prose(9, 150);
    m.applyAll([
      user('u', 'tail it'),
      callMsg('a1', [call('c1', 'Bash', 'tail')]),
      result('r1', 'c1', out),
      callMsg('a2', [call('c2', 'Bash', 'tail')]),
      result('r2', 'c2', out),
      callMsg('a3', [call('c3', 'Bash', 'tail')]),
      result('r3', 'c3', out),
    ]);
    const [, s1, s2, s3] = m.sections();
    expect(s1!.density).toBeLessThan(0.2);
    expect(s2!.density).toBeLessThan(0.2);
    expect(s3!.density).toBe(1);
    m.replaceSections([s2!.id], { text: 'second tail elided', editId: 'e', handle: 'h', reason: 'redundant-tool-output' });
    expect(m.section(s1!.id)!.density).toBeLessThan(0.2);
    m.apply({ type: 'truncate', keepThroughId: 'r1', reason: 'rewind' });
    expect(m.section(s1!.id)!.density).toBe(1);
  });
});
