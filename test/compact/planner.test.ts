import { describe, expect, it } from 'vitest';
import { applyPlan, handleFor, originalsOf, planCompaction, SummaryCache, summaryKey } from '../../src/compact/planner.js';
import type { Summarizer } from '../../src/compact/types.js';
import type { SelectedRun } from '../../src/compact/select.js';
import type { Message } from '../../src/model/messages.js';
import { createExtractiveSummarizer } from '../../src/compact/summarize/extractive.js';
import { isContextdError } from '../../src/util/errors.js';
import { generateSession } from '../../src/bench/retention.js';
import { SessionModel } from '../../src/model/index.js';
import { Script, fileBody, jsTrace } from './helpers.js';

/** A long session: an instruction, many file reads, repeated test runs, a trace and a goal. */
function longScript(): Script {
  const s = new Script()
    .system('You are a coding agent.')
    .user('Fix the flaky pool test in tests/pool.test.ts. You must never change the public API of ConnectionPool.');
  for (let i = 0; i < 12; i++) {
    s.assistant(`Reading module ${i} to understand the pool lifecycle.`);
    s.tool('Read', { file_path: `src/mod${i % 4}.ts` }, fileBody(`mod${i}`));
    if (i % 3 === 0) s.tool('Bash', { command: 'npm test' }, jsTrace('src/server/pool.ts'), true);
  }
  s.user('Now set max_idle to 30 in src/server/pool.ts and rerun the tests.');
  return s;
}

const fixedNow = () => 1_700_000_000_000;

describe('planCompaction', () => {
  it('reserve mode plans until headroom ≥ reserve + hysteresis, never touching anchors or pending calls', async () => {
    const probe = longScript().model();
    const budget = Math.ceil(probe.tokens() / 0.95); // 5% headroom: below the 15% reserve
    const model = longScript().pendingCall('Bash', { command: 'npm test' }).model({ budgetTokens: budget });
    expect(model.headroom().headroom).toBeLessThan(0.15);
    const plan = await planCompaction(model, { mode: 'reserve', now: fixedNow });
    expect(plan.edits.length).toBeGreaterThan(0);
    expect(plan.headroomAfter).toBeGreaterThanOrEqual(0.25);
    expect(plan.tokensAfter).toBe(plan.tokensBefore - plan.edits.reduce((n, e) => n + e.tokensBefore - e.tokensAfter, 0));
    const byId = new Map(model.sections().map((s) => [s.id, s]));
    for (const e of plan.edits) {
      for (const id of e.replaces) {
        expect(byId.get(id)!.anchor).toBe(false);
        expect(byId.get(id)!.pending ?? false).toBe(false);
      }
      expect(e.handle).toMatch(/^h_[0-9a-f]{16}$/);
      expect(e.handle).toBe(handleFor(plan.sessionId, e.replaces.flatMap((id) => [...model.messagesOf(id)])));
      expect(e.summary.content).toContain(`[contextd recall ${e.handle}]`);
      expect(Object.keys(e.scores).sort()).toEqual([...e.replaces].sort());
      expect(e.tokensAfter).toBeLessThan(e.tokensBefore);
    }
    expect(plan).toMatchObject({ sessionId: 'test-session', mode: 'reserve', createdAt: fixedNow(), modelVersion: model.version });
  });

  it('is deterministic for the same input', async () => {
    const a = await planCompaction(longScript().model({ budgetTokens: 9000 }), { mode: 'manual', targetHeadroom: 0.5, now: fixedNow });
    const b = await planCompaction(longScript().model({ budgetTokens: 9000 }), { mode: 'manual', targetHeadroom: 0.5, now: fixedNow });
    expect(a.edits.length).toBeGreaterThan(0);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });

  it('merges adjacent low-score sections into one edit with one summary', async () => {
    const s = new Script().user('Summarize the chat so far, then keep going with the plan.');
    for (let i = 0; i < 10; i++) s.assistant(`Note ${i}: the ${['queue', 'lease', 'cursor'][i % 3]} module looks fine; nothing to change in part ${i}. `.repeat(8));
    s.user('Now write the report to docs/report.md please.');
    const model = s.model({ budgetTokens: 4000 });
    const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * 0.3), now: fixedNow });
    const merged = plan.edits.filter((e) => e.replaces.length > 1);
    expect(merged.length).toBeGreaterThan(0);
    const order = model.sections().map((x) => x.id);
    for (const e of merged) {
      const idx = e.replaces.map((id) => order.indexOf(id));
      idx.forEach((v, i) => i > 0 && expect(v).toBe(idx[i - 1]! + 1));
    }
  });

  it('soft mode only takes detector cruft', async () => {
    const model = longScript().model({ budgetTokens: 12_000 });
    const plan = await planCompaction(model, { mode: 'soft', softWatermark: 0.2, now: fixedNow });
    expect(plan.edits.length).toBeGreaterThan(0);
    for (const e of plan.edits) expect(e.reason).not.toBe('low-score');
    expect(plan.edits.some((e) => e.reason === 'stale-read' || e.reason === 'redundant-tool-output')).toBe(true);
  });

  it('returns an empty plan when the target already holds', async () => {
    const model = longScript().model({ budgetTokens: 1_000_000 });
    const plan = await planCompaction(model, { mode: 'reserve', now: fixedNow });
    expect(plan.edits).toEqual([]);
    expect(plan.tokensAfter).toBe(plan.tokensBefore);
  });

  it('survival check re-injects key facts a summarizer dropped', async () => {
    const lazy: Summarizer = { name: 'lazy', summarize: () => Promise.resolve('stuff happened') };
    const s = new Script()
      .system('You are a coding agent.')
      .user('Migrate the scheduler to cron syntax.')
      .assistant('Plan: the tick must always stay under 50 ms. Using scheduler_tick_ms=40 in config/jobs.toml.')
      .tool('Edit', { file_path: 'src/jobs/scheduler.ts', old_string: 'a', new_string: 'b' }, 'ok')
      .tool('Bash', { command: 'npm test' }, `${fileBody('x', 30)}\nError: cron parse failed at field 3`, true);
    for (let i = 0; i < 6; i++) s.tool('Read', { file_path: `src/other${i}.ts` }, fileBody(`o${i}`));
    s.user('Now finish the migration of the scheduler.');
    const model = s.model({ budgetTokens: 100_000 });
    // an unreachable target: every compactable section is replaced
    const plan = await planCompaction(model, { mode: 'manual', targetTokens: 1, summarizer: lazy, now: fixedNow });
    const replacedIds = new Set(plan.edits.flatMap((e) => e.replaces));
    const editSection = model.sections().find((x) => model.messagesOf(x.id).some((m) => m.toolCalls?.some((c) => c.name === 'Edit')))!;
    expect(replacedIds.has(editSection.id)).toBe(true);
    expect(plan.survival.reinjected).toBeGreaterThan(0);
    expect(plan.survival.missing.length).toBe(plan.survival.reinjected);
    expect(plan.survival.checked).toBeGreaterThanOrEqual(plan.survival.reinjected);
    const all = plan.edits.map((e) => e.summary.content).join('\n');
    expect(all).toContain('stuff happened');
    expect(all).toContain('src/jobs/scheduler.ts');
    expect(all).toContain('Error: cron parse failed at field 3');
    const replaced = new Set(plan.edits.flatMap((e) => e.replaces));
    const planSection = model.sections().find((x) => model.messagesOf(x.id).some((m) => m.text.startsWith('Plan:')))!;
    if (replaced.has(planSection.id)) {
      expect(all).toContain('the tick must always stay under 50 ms');
      expect(all).toContain('scheduler_tick_ms=40');
    }
  });

  it('clamps the size kept for declined edits below the window: kept from a larger window (a model switch), it does not stop the plan', async () => {
    const g = generateSession(7, 30);
    const sized = new SessionModel({ sessionId: g.sessionId, budgetTokens: 1_000_000 });
    sized.applyAll(g.events);
    // The window now is exactly what the context holds (headroom 0); the size kept at the decline came from a window 10x larger.
    const model = new SessionModel({ sessionId: g.sessionId, budgetTokens: sized.tokens() });
    model.applyAll(g.events);
    const plan = await planCompaction(model, { mode: 'reserve', reserveRatio: 0.15, now: fixedNow, declined: { sectionIds: new Set(), keepTokens: sized.tokens() * 10 } });
    expect(plan.edits.length).toBeGreaterThan(0);
    // At most the window less half the reserve is kept.
    expect(plan.tokensAfter).toBeLessThanOrEqual(Math.floor(model.budget().total * (1 - 0.15 / 2)));
  });

  it('reuses cached summaries on a re-plan after one appended line', async () => {
    const g = generateSession(7, 30);
    const model = new SessionModel({ sessionId: g.sessionId, budgetTokens: 20_000 });
    model.applyAll(g.events);
    let calls = 0;
    const counting: Summarizer = { name: 'counting', summarize: (i) => { calls++; return Promise.resolve(`summary of ${i.sections.length}`); } };
    const cache = new SummaryCache();
    const first = await planCompaction(model, { mode: 'reserve', summarizer: counting, cache, now: fixedNow });
    const firstCalls = calls;
    expect(firstCalls).toBeGreaterThan(0);
    model.apply({ type: 'message', message: { id: 'late', role: 'assistant', text: 'Still working on it.' } });
    const second = await planCompaction(model, { mode: 'reserve', summarizer: counting, cache, now: fixedNow });
    expect(second.edits.length).toBeGreaterThan(0);
    expect(calls - firstCalls).toBeLessThan(firstCalls);
    expect(second.planId).not.toBe(first.planId);
  });

  it('never hands a run the cached summary of a run of another reason or goal (the summarizer reads both)', () => {
    const messages: Message[] = [{ id: 'm7', role: 'tool', text: 'Error: connect ECONNREFUSED 127.0.0.1:5432', toolCallId: 'c7' }];
    const handle = handleFor('s', messages);
    // Scores are not part of the key (they move with every line): a low-score run's detail is
    // then `{}`, as is a verbose-error-trace run's with no detail.
    const lowScore: SelectedRun = { sections: [], reason: 'low-score', detail: { score: 0.12 }, tokensBefore: 40, summaryTokens: 24 };
    const trace: SelectedRun = { ...lowScore, reason: 'verbose-error-trace', detail: {} };
    const key = (run: SelectedRun, goal: string): string => summaryKey('llm', run, goal, handle, ['ECONNREFUSED'], messages);
    const cache = new SummaryCache();
    cache.set(key(lowScore, 'fix the database pool'), 'low-value output about the pool');
    expect(cache.get(key(lowScore, 'fix the database pool'))).toBe('low-value output about the pool');
    expect(cache.get(key({ ...lowScore, detail: { score: 0.3 } }, 'fix the database pool'))).toBe('low-value output about the pool');
    expect(cache.get(key(trace, 'fix the database pool'))).toBeUndefined();
    expect(cache.get(key(lowScore, 'ship the release notes'))).toBeUndefined();
  });
});

describe('planCompaction while the model changes (a daemon pauses it between steps)', () => {
  /** A model 5% over its window, and the id of its first message. */
  function overfull(): { model: SessionModel; first: string } {
    const probe = longScript().model();
    const model = longScript().model({ budgetTokens: Math.ceil(probe.tokens() / 0.95) });
    return { model, first: model.messages()[0]?.id ?? '' };
  }

  it('a rewind at any pause expires the plan (PLAN_EXPIRED): no plan names sections that are gone', async () => {
    let pauses = 0;
    const whole = overfull();
    const plan = await planCompaction(whole.model, { mode: 'reserve', now: fixedNow, pause: () => void pauses++ });
    expect(plan.edits.length).toBeGreaterThan(0);
    expect(pauses).toBeGreaterThan(4);
    // The first pause (right after the sections were read), one in the middle, the last.
    for (const at of [1, Math.ceil(pauses / 2), pauses]) {
      const { model, first } = overfull();
      let n = 0;
      const pause = (): undefined => {
        if (++n === at) model.apply({ type: 'truncate', keepThroughId: first, reason: 'rewind' });
        return undefined;
      };
      const err = await planCompaction(model, { mode: 'reserve', now: fixedNow, pause }).then(
        (p) => p,
        (e: unknown) => e,
      );
      expect(isContextdError(err) ? err.code : err).toBe('PLAN_EXPIRED');
    }
  });

  it('a truncated tail while it pauses does not expire it: its edits name sections that still stand, where they stand', async () => {
    const { model } = overfull();
    const ids = model.messages().map((m) => m.id);
    let n = 0;
    const pause = (): undefined => {
      if (++n === 2) model.apply({ type: 'truncate', keepThroughId: ids[ids.length - 3] ?? '', reason: 'the agent replaced its ephemeral tail' });
      return undefined;
    };
    const epoch = model.epoch;
    const plan = await planCompaction(model, { mode: 'reserve', now: fixedNow, pause });
    expect(model.epoch).toBeGreaterThan(epoch);
    expect(plan.edits.length).toBeGreaterThan(0);
    const live = model.messages().map((m) => m.id);
    for (const e of plan.edits) {
      expect(live.slice(e.messageRange.start, e.messageRange.end + 1)).toEqual(e.replaces.flatMap((id) => model.messagesOf(id).map((m) => m.id)));
      expect(originalsOf(e)).toBeDefined();
    }
  });

  it('an append while it pauses does not expire it: its numbers are those of the model it read', async () => {
    const { model } = overfull();
    const version = model.version;
    const tokens = model.tokens();
    let n = 0;
    const pause = (): undefined => {
      if (++n === 1) model.apply({ type: 'message', message: { id: 'late-1', role: 'assistant', text: 'Still reading the pool module. '.repeat(40) } });
      return undefined;
    };
    const plan = await planCompaction(model, { mode: 'reserve', now: fixedNow, pause });
    expect(plan.modelVersion).toBe(version);
    expect(plan.tokensBefore).toBe(tokens);
    expect(plan.edits.length).toBeGreaterThan(0);
  });

  it('originalsOf: the messages each edit summarized and its handle names, also once the model moved on', async () => {
    const { model } = overfull();
    const plan = await planCompaction(model, { mode: 'reserve', now: fixedNow });
    const before = new Map(plan.edits.map((e) => [e.editId, e.replaces.flatMap((id) => [...model.messagesOf(id)])]));
    applyPlan(model, plan);
    for (const e of plan.edits) {
      expect(e.replaces.flatMap((id) => [...model.messagesOf(id)])).toEqual([]);
      const source = originalsOf(e);
      const summarized = e.replaces.flatMap((id) => [...(source?.messagesOf(id) ?? [])]);
      expect(summarized.length).toBeGreaterThan(0);
      expect(summarized).toEqual(before.get(e.editId));
      expect(handleFor(plan.sessionId, summarized)).toBe(e.handle);
    }
    // An edit it did not make here (read back from the plan log, say) has none.
    const [edit] = plan.edits;
    expect(edit && originalsOf({ ...edit })).toBeUndefined();
  });

  it('a summarizer that fails stops the plan: no more edits are summarized after it', async () => {
    const base = createExtractiveSummarizer();
    let calls = 0;
    const counting: Summarizer = {
      name: 'counting',
      summarize: (input, signal) => {
        calls++;
        return base.summarize(input, signal);
      },
    };
    const all = overfull();
    await planCompaction(all.model, { mode: 'manual', targetHeadroom: 0.9, now: fixedNow, summarizer: counting });
    const whole = calls;
    expect(whole).toBeGreaterThan(8);
    calls = 0;
    const failing: Summarizer = {
      name: 'failing',
      summarize: (input, signal) => (++calls === 1 ? Promise.reject(new Error('summarizer down')) : base.summarize(input, signal)),
    };
    const { model } = overfull();
    await expect(planCompaction(model, { mode: 'manual', targetHeadroom: 0.9, now: fixedNow, summarizer: failing })).rejects.toThrow('summarizer down');
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    // the calls already under way when it failed (one per worker), none after
    expect(calls).toBeLessThanOrEqual(4);
  });
});

describe('applyPlan', () => {
  it('replaces the accepted edits in the model', async () => {
    const model = longScript().model({ budgetTokens: 9000 });
    const plan = await planCompaction(model, { mode: 'manual', targetHeadroom: 0.5, now: fixedNow });
    const chosen = plan.edits.slice(0, 2).map((e) => e.editId);
    const before = model.tokens();
    const created = applyPlan(model, plan, chosen);
    expect(created).toHaveLength(chosen.length);
    for (const s of created) expect(s.kind).toBe('summary');
    const gone = plan.edits.slice(0, 2).flatMap((e) => e.replaces);
    for (const id of gone) expect(model.section(id)).toBeUndefined();
    const expectSaved = plan.edits.slice(0, 2).reduce((n, e) => n + e.tokensBefore - e.tokensAfter, 0);
    expect(before - model.tokens()).toBe(expectSaved);
    expect(model.messages().some((m) => m.text.includes(`[contextd recall ${plan.edits[0]!.handle}]`))).toBe(true);
  });

  it('refuses a stale plan with PLAN_EXPIRED and changes nothing', async () => {
    const model = longScript().model({ budgetTokens: 9000 });
    const plan = await planCompaction(model, { mode: 'manual', targetHeadroom: 0.5, now: fixedNow });
    applyPlan(model, plan, [plan.edits[0]!.editId]);
    const tokens = model.tokens();
    let err: unknown;
    try {
      applyPlan(model, plan);
    } catch (e) {
      err = e;
    }
    expect(isContextdError(err, 'PLAN_EXPIRED')).toBe(true);
    expect(model.tokens()).toBe(tokens);
  });
});
