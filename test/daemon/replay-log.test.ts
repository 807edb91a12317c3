import { describe, expect, it } from 'vitest';
import { generateSession } from '../../src/bench/retention.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { SessionModel } from '../../src/model/index.js';
import { planCompaction } from '../../src/compact/index.js';
import { checkEditsStand, replayModel } from '../../src/daemon/replay-log.js';
import { ContextdError, ErrorCode } from '../../src/util/errors.js';

const counter = createTokenCounter();
const modelOf = (seed: number): SessionModel => {
  const g = generateSession(seed, 24);
  const m = new SessionModel({ sessionId: 's', tokenCounter: counter, budgetTokens: 20_000 });
  m.applyAll(g.events);
  return m;
};

describe('replaying applied edits', () => {
  it('replaces only sections that hold the tokens and messages an edit replaced when it was made', async () => {
    const planned = modelOf(7);
    const plan = await planCompaction(planned, { mode: 'reserve', tokenCounter: counter });
    expect(plan.edits.length).toBeGreaterThan(1);
    const ids = plan.edits.map((e) => e.editId);
    // the model the plan was made on, built again: every edit stands, and replays to the same figures
    expect(() => checkEditsStand(modelOf(7), plan, ids)).not.toThrow();
    const g = generateSession(7, 24);
    const replayed = await replayModel(() => new SessionModel({ sessionId: 's', tokenCounter: counter, budgetTokens: 20_000 }), g.events, [g.events.length], [{ kind: 'edits', offset: 1, plan, editIds: ids }]);
    expect(replayed.tokens()).toBe(plan.tokensAfter);

    // another session whose section ids exist but hold other text: refused, saying what differs
    const other = modelOf(8);
    let caught: unknown;
    try {
      checkEditsStand(other, plan, ids);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ContextdError);
    expect((caught as ContextdError).code).toBe(ErrorCode.PLAN_EXPIRED);
    expect((caught as ContextdError).message).toMatch(/edit .* replaced \d+ tokens of messages \d+–\d+; its sections hold \d+ tokens of messages \d+–\d+ now|is not in the model/);
    // only the chosen edits are checked
    expect(() => checkEditsStand(other, plan, [])).not.toThrow();
  });
});
