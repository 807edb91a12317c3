import { describe, expect, it } from 'vitest';
import { generateSession } from '../../src/bench/retention.js';
import type { Message, TranscriptEvent } from '../../src/model/messages.js';
import { memoList, memoMessage } from '../../src/compact/memo.js';
import { planCompaction, SummaryCache } from '../../src/compact/planner.js';
import { redundantToolOutput } from '../../src/compact/detectors/index.js';
import { detectorContext } from '../../src/compact/planner.js';
import { SessionModel } from '../../src/model/index.js';

const fixedNow = (): number => 1_700_000_000_000;

function freshModel(seed: number, turns: number, budgetTokens: number): SessionModel {
  const g = generateSession(seed, turns);
  const model = new SessionModel({ sessionId: g.sessionId, budgetTokens });
  model.applyAll(g.events);
  return model;
}

describe('memo', () => {
  it('computes once per message object, again for a new object with the same content', () => {
    const m: Message = { id: 'm1', role: 'user', text: 'hello world' };
    let calls = 0;
    const f = (x: Message): number => {
      calls++;
      return x.text.length;
    };
    expect(memoMessage(m, 'len', f)).toBe(11);
    expect(memoMessage(m, 'len', f)).toBe(11);
    expect(calls).toBe(1);
    expect(memoMessage({ ...m }, 'len', f)).toBe(11);
    expect(calls).toBe(2);
  });

  it('recomputes a list value when the list changes (a tool result arrives)', () => {
    const call: Message = { id: 'a', role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'Bash', arguments: '{"command":"ls"}' }] };
    const result: Message = { id: 't', role: 'tool', text: 'x.ts\ny.ts', toolCallId: 'c1' };
    let calls = 0;
    const count = (ms: readonly Message[]): number => {
      calls++;
      return ms.length;
    };
    expect(memoList([call], 'n', count)).toBe(1);
    expect(memoList([call, result], 'n', count)).toBe(2);
    expect(memoList([call, result], 'n', count)).toBe(2);
    expect(calls).toBe(2);
    const other: Message = { id: 'b', role: 'assistant', text: 'x' };
    expect(memoList([other, result], 'n', count)).toBe(2);
    expect(calls).toBe(3);
  });
});

describe('planner with warm caches', () => {
  it('plans the same session identically cold (new message objects) and warm (cached derived data)', async () => {
    const cold = await planCompaction(freshModel(11, 40, 30_000), { mode: 'reserve', now: fixedNow });
    const warmModel = freshModel(11, 40, 30_000);
    const first = await planCompaction(warmModel, { mode: 'reserve', now: fixedNow });
    const again = await planCompaction(warmModel, { mode: 'reserve', now: fixedNow, cache: new SummaryCache() });
    expect(cold.edits.length).toBeGreaterThan(0);
    expect(first).toEqual(cold);
    expect(again).toEqual(cold);
  });

  it('a re-plan after an appended line equals a plan of a fresh model with that line', async () => {
    const line = { type: 'message' as const, message: { id: 'late', role: 'assistant' as const, text: 'Running the pool tests again with the new timeout.' } };
    const warm = freshModel(12, 40, 30_000);
    const cache = new SummaryCache();
    await planCompaction(warm, { mode: 'reserve', now: fixedNow, cache });
    warm.apply(line);
    const replan = await planCompaction(warm, { mode: 'reserve', now: fixedNow, cache });
    const fresh = freshModel(12, 40, 30_000);
    fresh.apply(line);
    const full = await planCompaction(fresh, { mode: 'reserve', now: fixedNow });
    expect(full.edits.length).toBeGreaterThan(0);
    expect(replan).toEqual(full);
  });

  it('redundant-tool-output gives the same candidates on repeated runs', () => {
    const model = freshModel(13, 40, 30_000);
    // the same command run three times, with the same long output
    const output = Array.from({ length: 40 }, (_, i) => ` ✓ tests/pool${i}.test.ts (${i} ms)`).join('\n');
    model.applyAll(
      [0, 1, 2].flatMap((i): TranscriptEvent[] => [
        { type: 'message', message: { id: `again-${i}`, role: 'assistant', text: '', toolCalls: [{ id: `again-call-${i}`, name: 'terminal', arguments: JSON.stringify({ command: 'npm test' }) }] } },
        { type: 'message', message: { id: `again-out-${i}`, role: 'tool', text: output, toolCallId: `again-call-${i}`, toolName: 'terminal' } },
      ]),
    );
    const a = redundantToolOutput.detect(detectorContext(model));
    const b = redundantToolOutput.detect(detectorContext(model));
    expect(a.length).toBeGreaterThan(0);
    expect(b).toEqual(a);
  });
});
