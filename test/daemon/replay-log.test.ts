import { describe, expect, it } from 'vitest';
import { generateSession } from '../../src/bench/retention.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { SessionModel, type DerivedDataCache } from '../../src/model/index.js';
import { applyPlan, planCompaction } from '../../src/compact/index.js';
import { replayModel } from '../../src/daemon/replay-log.js';
import { ContextdError, ErrorCode } from '../../src/util/errors.js';

const counter = createTokenCounter();
const events = (seed: number) => generateSession(seed, 24).events;
const fresh = (derivedCache?: DerivedDataCache) => (): SessionModel => new SessionModel({ sessionId: 's', tokenCounter: counter, budgetTokens: 20_000, ...(derivedCache ? { derivedCache } : {}) });

describe('replaying applied edits', () => {
  it('rebuilds the model an ack left, without scoring it, and refuses to replace sections that hold other text', async () => {
    const planned = fresh()();
    planned.applyAll(events(7));
    const plan = await planCompaction(planned, { mode: 'reserve', tokenCounter: counter });
    expect(plan.edits.length).toBeGreaterThan(1);
    const ids = plan.edits.slice(1).map((e) => e.editId);
    applyPlan(planned, plan, ids);

    // the same transcript, the step replayed: the same messages and tokens; no derived data read (no scoring pass)
    let reads = 0;
    const counting: DerivedDataCache = { getMany: (texts) => ((reads += texts.length), texts.map(() => undefined)), setMany: () => undefined };
    const g = events(7);
    const replayed = await replayModel(fresh(counting), g, [g.length], [{ kind: 'edits', offset: 1, plan, editIds: ids }]);
    expect(replayed.messages().map((m) => [m.id, m.text])).toEqual(planned.messages().map((m) => [m.id, m.text]));
    expect(replayed.tokens()).toBe(planned.tokens());
    expect(reads).toBe(0);
    expect(replayed.sections()).toEqual(planned.sections()); // scored when read, as the ack's model

    // another session whose section ids exist but hold other text: refused, saying what differs
    const other = events(8);
    let caught: unknown;
    try {
      await replayModel(fresh(), other, [other.length], [{ kind: 'edits', offset: 1, plan, editIds: ids }]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ContextdError);
    expect((caught as ContextdError).code).toBe(ErrorCode.PLAN_EXPIRED);
    expect((caught as ContextdError).message).toMatch(/^edit \S+ cannot be replayed: (it replaced \d+ tokens of messages \d+–\d+; its sections hold \d+ tokens of messages \d+–\d+ now|section \S+ is (not in the model|an anchor|a pending tool call))$/);
    // only the chosen edits are replayed: none chosen, nothing checked
    await expect(replayModel(fresh(), other, [other.length], [{ kind: 'edits', offset: 1, plan, editIds: [] }])).resolves.toBeInstanceOf(SessionModel);
  });
});
