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
