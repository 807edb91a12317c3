import { describe, expect, it } from 'vitest';
import { SessionModel } from '../../src/model/index.js';
import { planCompaction, toCalibratedTokens } from '../../src/compact/index.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';
import { demoTranscript } from '../../src/demo/transcript.js';

function model(rounds: number, budgetTokens: number): SessionModel {
  const adapter = createOpenAIChatAdapter();
  const m = new SessionModel({ sessionId: 'cal', budgetTokens });
  m.applyAll(demoTranscript({ rounds }).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i * 1000)));
  return m;
}

describe('plans against what the agent reports', () => {
  it('counts the agent-reported size in headroom and plans the reserve back in that space', async () => {
    const m = model(10, 40_000);
    const counted = m.tokens();
    // The agent sees 12k tokens more than the transcript shows (its system prompt and tools).
    m.apply({ type: 'usage', contextTokens: counted + 12_000 });
    const h = m.headroom();
    expect(h.countedTokens).toBe(counted);
    expect(h.tokens).toBe(counted + 12_000);
    expect(h.headroom).toBeCloseTo(1 - (counted + 12_000) / 40_000, 9);

    const plan = await planCompaction(m, { mode: 'reserve', reserveRatio: 0.15, hysteresis: 0.1 });
    expect(plan.edits.length).toBeGreaterThan(0);
    expect(plan.headroomBefore).toBeCloseTo(h.headroom, 9);
    // Reaching reserve + hysteresis in the agent's terms needs 12k more saved than in ours.
    expect(toCalibratedTokens(m, plan.tokensAfter)).toBeLessThanOrEqual(40_000 * 0.75);
    expect(plan.headroomAfter).toBeGreaterThanOrEqual(0.25 - 1e-9);

    const uncalibrated = await planCompaction(model(10, 40_000), { mode: 'reserve', reserveRatio: 0.15, hysteresis: 0.1 });
    expect(plan.tokensAfter).toBeLessThan(uncalibrated.tokensAfter);
  });
});

describe('archive handles', () => {
  it('name the replaced messages, not section ids that restart after a rebuild', async () => {
    const { handleFor } = await import('../../src/compact/index.js');
    const a = [{ id: 'L100', role: 'tool' as const, text: 'x', toolCallId: 'c1' }];
    const b = [{ id: 'L900', role: 'tool' as const, text: 'y', toolCallId: 'c9' }];
    expect(handleFor('s', a)).toBe(handleFor('s', [...a]));
    expect(handleFor('s', a)).not.toBe(handleFor('s', b));
    // Two calls of one assistant message are two sections: their handles differ too.
    const call = (id: string) => ({ id: 'L5', role: 'assistant' as const, text: '', toolCalls: [{ id, name: 'grep', arguments: '{}' }] });
    expect(handleFor('s', [call('c1')])).not.toBe(handleFor('s', [call('c2')]));
    // A model rebuilt from the same transcript plans the same handles for the same originals.
    const p1 = await planCompaction(model(10, 20_000), { mode: 'reserve', now: () => 1 });
    const p2 = await planCompaction(model(10, 20_000), { mode: 'reserve', now: () => 1 });
    expect(p1.edits.map((e) => e.handle)).toEqual(p2.edits.map((e) => e.handle));
  });
});
