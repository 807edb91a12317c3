/**
 * Plan time for a ~200k-token generated session: a cold plan (the first plan of a freshly
 * loaded model, its first scoring included) and a re-plan after one appended line, each
 * repeated for percentiles.
 *
 * The cold plan is measured as the daemon makes it after a restart: the model is built from
 * fresh message objects (nothing memoized on the old ones is reused) beside a real SQLite
 * derived-data cache that an earlier run filled, so term stats and fingerprints are read, not
 * analysed. `firstPlanMs` is the plan of a session never planned before (nothing stored: every
 * message analysed within the plan).
 *
 * The JIT warms up first on untimed cold plans and re-plans (`warmUp` gives their times): a
 * daemon runs for hours, so its percentiles are those of compiled code.
 *
 * Each figure also has a `…CpuMs` twin: the process CPU (user + system, `process.cpuUsage()`)
 * spent within the plan, which the machine's other load does not inflate as it does wall time;
 * and `mainThreadCpuMs` the CPU of the main thread alone per plan (Linux; `mainThreadCpuMsMean`
 * its mean), without V8's helper threads (parallel GC, compiler), which `process.cpuUsage()`
 * counts. A plan whose wall time far exceeds its main-thread CPU waited on something else: a
 * GC helper, or the machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionModel, type DerivedDataCache } from '../model/index.js';
import type { TranscriptEvent } from '../model/messages.js';
import { createTokenCounter } from '../model/tokens.js';
import { planCompaction, SummaryCache } from '../compact/index.js';
import { DerivedData, openDb } from '../store/index.js';
import { SqliteDerivedDataCache } from '../daemon/derived-cache.js';
import { silentLogger } from '../util/logger.js';
import { generateSession } from './retention.js';
import { mainThreadCpuNs, round, summarize } from './harness.js';

export interface PlanBenchOptions {
  /** Cold plans measured, each on a freshly built model (default COLD_RUNS). */
  readonly coldRuns?: number;
  /** Re-plans measured, each after one appended line (default REPLAN_RUNS). */
  readonly replanRuns?: number;
}

/**
 * Measured runs by default: 100 each, so `p99` is the 99th of 100 runs. Of fewer, it is the
 * slowest run (15 cold plans gave a p93 under the name p99, one GC pause deciding it).
 */
const COLD_RUNS = 100;
const REPLAN_RUNS = 100;

/** Untimed (JIT warm-up) cold plans and re-plans before the measured ones. */
const WARM_COLD_PLANS = 3;
export const WARM_REPLANS = 15;

/**
 * The line appended before re-plan `i`. The warm-up's (`warmUp`) has a text of its own: it is
 * there for V8 to compile the plan paths, and must not leave the measured re-plans' lines
 * analysed already in the content-keyed derived data.
 */
export function appendedLine(id: string, i: number, warmUp = false): TranscriptEvent {
  const text = warmUp ? `Warming up: the pool tests once more with the old timeout (${i}).` : `Running the pool tests again with the new timeout (${i}).`;
  return { type: 'message', message: { id, role: 'assistant', text } };
}

/** Run the plan scenario and return its JSON figures. */
export async function benchPlan(options: PlanBenchOptions = {}): Promise<Record<string, unknown>> {
  const counter = createTokenCounter();
  const g = generateSession(4242, 137);
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-plan-'));
  const db = openDb(join(dir, 'contextd.db'));
  const derived = new SqliteDerivedDataCache(new DerivedData(db), silentLogger());
  const build = (derivedCache?: DerivedDataCache): SessionModel => {
    const m = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: 200_000, ...(derivedCache ? { derivedCache } : {}) });
    // Fresh message objects, as after a restart: nothing memoized on the old ones is reused.
    m.applyAll(structuredClone(g.events));
    return m;
  };
  const plan = (model: SessionModel, cache: SummaryCache): ReturnType<typeof planCompaction> => planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
  /** Run one plan, recording its wall time and its CPU time (ms). */
  const timed = async (model: SessionModel, cache: SummaryCache, wall: number[] | undefined, cpu: number[] | undefined, main?: number[]): ReturnType<typeof planCompaction> => {
    const m0 = mainThreadCpuNs();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const p = await plan(model, cache);
    const t1 = performance.now();
    const c = process.cpuUsage(c0);
    const m1 = mainThreadCpuNs();
    wall?.push(t1 - t0);
    cpu?.push((c.user + c.system) / 1000);
    if (m0 !== undefined && m1 !== undefined) main?.push((m1 - m0) / 1e6);
    return p;
  };
  const mean = (xs: readonly number[]): number | undefined => (xs.length > 0 ? round(xs.reduce((a, b) => a + b, 0) / xs.length) : undefined);
  try {
    const first: number[] = [];
    const firstCpu: number[] = [];
    const firstMain: number[] = [];
    for (let i = 0; i < 6; i++) {
      const model = build();
      // The first is the JIT warm-up.
      await timed(model, new SummaryCache(), i > 0 ? first : undefined, i > 0 ? firstCpu : undefined, i > 0 ? firstMain : undefined);
    }
    // The run before the restart: its plan stores every message's derived data.
    await plan(build(derived), new SummaryCache());
    derived.flush();
    // JIT warm-up of the two measured paths, untimed in the percentiles: a daemon runs for hours,
    // and V8 compiles them within its first few plans. Without it the first two cold plans and
    // the first ten re-plans of the run were the p99 (1.5-5x the others). Their times are
    // reported apart (`warmUp`).
    const warmCold: number[] = [];
    const warmRe: number[] = [];
    let warm = build(derived);
    let warmCache = new SummaryCache();
    for (let i = 0; i < WARM_COLD_PLANS; i++) {
      if (i > 0) {
        warm = build(derived);
        warmCache = new SummaryCache();
      }
      await timed(warm, warmCache, warmCold, undefined);
    }
    for (let i = 0; i < WARM_REPLANS; i++) {
      warm.apply(appendedLine(`warm-${i}`, i, true));
      await timed(warm, warmCache, warmRe, undefined);
    }
    const cold: number[] = [];
    const coldCpu: number[] = [];
    const coldMain: number[] = [];
    let tokens = 0;
    let edits = 0;
    let model = build(derived);
    let cache = new SummaryCache();
    for (let i = 0; i < (options.coldRuns ?? COLD_RUNS); i++) {
      model = build(derived);
      cache = new SummaryCache();
      const p = await timed(model, cache, cold, coldCpu, coldMain);
      tokens = p.tokensBefore;
      edits = p.edits.length;
    }
    const replan: number[] = [];
    const replanCpu: number[] = [];
    const replanMain: number[] = [];
    for (let i = 0; i < (options.replanRuns ?? REPLAN_RUNS); i++) {
      model.apply(appendedLine(`appended-${i}`, i));
      await timed(model, cache, replan, replanCpu, replanMain);
    }
    return { scenario: 'plan', sessionTokens: tokens, edits, coldPlanMs: summarize(cold), replanMs: summarize(replan), firstPlanMs: summarize(first),
      coldPlanCpuMs: summarize(coldCpu), replanCpuMs: summarize(replanCpu), firstPlanCpuMs: summarize(firstCpu),
      mainThreadCpuMsMean: { coldPlan: mean(coldMain), replan: mean(replanMain), firstPlan: mean(firstMain) },
      mainThreadCpuMs: { coldPlan: summarize(coldMain), replan: summarize(replanMain), firstPlan: summarize(firstMain) },
      warmUp: { coldPlanMs: warmCold.map((x) => round(x, 1)), replanMs: warmRe.map((x) => round(x, 1)) } };
  } finally {
    derived.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
