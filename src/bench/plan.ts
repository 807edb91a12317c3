/**
 * Plan time for a ~200k-token generated session: a cold plan (the first plan of a freshly
 * loaded model, its first scoring included) and a re-plan after one appended line, each
 * repeated for percentiles.
 */
import { SessionModel } from '../model/index.js';
import { createTokenCounter } from '../model/tokens.js';
import { planCompaction, SummaryCache } from '../compact/index.js';
import { generateSession } from './retention.js';
import { summarize } from './harness.js';

export interface PlanBenchOptions {
  /** Cold plans measured (each on a freshly built model). */
  readonly coldRuns?: number;
  /** Re-plans measured, each after one appended line. */
  readonly replanRuns?: number;
}

/** Run the plan scenario and return its JSON figures. */
export async function benchPlan(options: PlanBenchOptions = {}): Promise<Record<string, unknown>> {
  const counter = createTokenCounter();
  const g = generateSession(4242, 137);
  const build = (): SessionModel => {
    const m = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: 200_000 });
    // Fresh message objects, as after a restart: nothing memoized on the old ones is reused.
    m.applyAll(structuredClone(g.events));
    return m;
  };
  const cold: number[] = [];
  let tokens = 0;
  let edits = 0;
  let model = build();
  let cache = new SummaryCache();
  await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache }); // JIT warm-up
  for (let i = 0; i < (options.coldRuns ?? 15); i++) {
    model = build();
    cache = new SummaryCache();
    const t0 = performance.now();
    const plan = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
    cold.push(performance.now() - t0);
    tokens = plan.tokensBefore;
    edits = plan.edits.length;
  }
  const replan: number[] = [];
  for (let i = 0; i < (options.replanRuns ?? 40); i++) {
    model.apply({ type: 'message', message: { id: `appended-${i}`, role: 'assistant', text: `Running the pool tests again with the new timeout (${i}).` } });
    const t0 = performance.now();
    await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
    replan.push(performance.now() - t0);
  }
  return { scenario: 'plan', sessionTokens: tokens, edits, coldPlanMs: summarize(cold), replanMs: summarize(replan) };
}
