import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReferenceIndex } from '../../src/compact/keyterms.js';
import type { Message } from '../../src/model/messages.js';

const VOCAB = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo_9', 'lima.ts'];

const messageArb: fc.Arbitrary<Message> = fc
  .record({
    role: fc.constantFrom('user', 'assistant', 'tool'),
    words: fc.array(fc.constantFrom(...VOCAB), { minLength: 0, maxLength: 4 }),
    args: fc.array(fc.constantFrom(...VOCAB), { maxLength: 2 }),
  })
  .map(({ role, words, args }): Message => {
    const text = words.join(' ');
    if (role === 'tool') return { id: 't', role: 'tool', toolCallId: 'c', text };
    if (role === 'assistant' && args.length > 0) return { id: 'a', role: 'assistant', text, toolCalls: [{ id: 'c', name: 'f', arguments: args.join(' ') }] };
    return { id: role[0] as string, role, text } as Message;
  });

type Op =
  | { kind: 'append'; ms: Message[] }
  | { kind: 'truncate'; keep: number }
  | { kind: 'goal'; goal: string }
  | { kind: 'hold' }
  | { kind: 'release' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.array(messageArb, { minLength: 1, maxLength: 3 }).map((ms): Op => ({ kind: 'append', ms })) },
  { weight: 1, arbitrary: fc.array(messageArb, { minLength: 33, maxLength: 40 }).map((ms): Op => ({ kind: 'append', ms })) },
  { weight: 1, arbitrary: fc.nat(60).map((keep): Op => ({ kind: 'truncate', keep })) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom(...VOCAB), { maxLength: 2 }).map((ws): Op => ({ kind: 'goal', goal: ws.join(' ') })) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'hold' }) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'release' }) },
);

describe('ReferenceIndex.keyTermsOfSet (property)', () => {
  it('over random appends, truncates, goal changes and held plans, equals a fresh index', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 60 }), (ops) => {
        const owner = {};
        let list: Message[] = [];
        let goal = '';
        const held: { index: ReferenceIndex; fresh: ReferenceIndex; length: number }[] = [];
        // term sets kept as they are across plans (as a section's memoized set is)
        const sets = [new Set(['alpha', 'bravo']), new Set(['charlie', 'kilo_9']), new Set(VOCAB), new Set(['lima.ts', 'delta', 'echo'])];
        for (const op of ops) {
          if (op.kind === 'append') list = [...list, ...op.ms.map((m) => ({ ...m }))];
          else if (op.kind === 'truncate') list = list.slice(0, Math.min(op.keep, list.length));
          else if (op.kind === 'goal') goal = op.goal;
          else if (op.kind === 'release') held.shift()?.index.release();
          const index = ReferenceIndex.of(owner, list, goal);
          const fresh = new ReferenceIndex(list, goal);
          for (let end = 0; end < list.length; end += Math.max(1, Math.floor(list.length / 7))) {
            for (const s of sets) expect(index.keyTermsOfSet(s, end)).toEqual(fresh.keyTermsOf(s, end));
          }
          // a plan still reading its index sees its own list, whatever later plans read
          for (const h of held) for (let end = 0; end < h.length; end += 3) for (const s of sets) expect(h.index.keyTermsOfSet(s, end)).toEqual(h.fresh.keyTermsOf(s, end));
          if (op.kind === 'hold') held.push({ index, fresh, length: list.length });
          else index.release();
        }
        for (const h of held) h.index.release();
      }),
      { numRuns: 300 },
    );
  });
});
