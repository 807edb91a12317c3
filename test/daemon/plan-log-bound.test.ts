import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DaemonStatus } from '../../src/daemon/api.js';
import { KEEP_ENDED_PLAN_BODIES } from '../../src/daemon/sessions.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';
import type { ContextdClient } from '../../src/ipc/client.js';
import { ModelSteps, PlanLog } from '../../src/store/index.js';
import { inState, sessionsDir, startDaemon, until } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the plan log of a long-running session', () => {
  it('keeps the bodies of only the newest plans that ended unapplied, and every applied plan whole', async () => {
    const dir = sessionsDir('contextd-planlog-', { long: demoTranscriptJsonl({ rounds: 8, variant: 'p' }) });
    dirs.push(dir);
    const { c, stop } = await startDaemon(dir);
    const planned: string[] = [];
    let applied = '';
    try {
      const id = ((await c.status()) as unknown as DaemonStatus).sessions[0]?.sessionId as string;
      // one plan applied in part, then plan after plan declined (session.compact may propose anything again)
      const first = await c.compact(id, { targetHeadroom: 0.9999 });
      await c.ack({ planId: first.planId, applied: true, editIds: [first.edits[0]?.editId as string] });
      applied = first.planId;
      for (let i = 0; i < 45; i++) {
        const p = await c.compact(id, { targetHeadroom: 0.9999 });
        planned.push(p.planId);
        await c.ack({ planId: p.planId, applied: false, reason: 'test: declined' });
      }
    } finally {
      await stop();
    }
    inState(dir, (db) => {
      const plans = new PlanLog(db);
      const rows = planned.map((p) => plans.get(p));
      // every row is kept (500 by default), the bodies of the newest only: pruned every 20 plans
      expect(rows.every((r) => r?.status === 'rejected')).toBe(true);
      const withBody = rows.filter((r) => r?.plan !== undefined).length;
      expect(withBody).toBeGreaterThanOrEqual(KEEP_ENDED_PLAN_BODIES);
      expect(withBody).toBeLessThanOrEqual(KEEP_ENDED_PLAN_BODIES + 20);
      expect(rows.at(-1)?.plan).toBeDefined();
      expect(rows[0]?.plan).toBeUndefined();
      // the applied plan stays whole: a restart or a rebuild replays it
      expect(plans.get(applied)).toMatchObject({ status: 'partially-applied', plan: { planId: applied } });
    });
  }, 90_000);

  it('marks a plan left open when the daemon stopped expired at the next start', async () => {
    const dir = sessionsDir('contextd-planlog-restart-', { open: demoTranscriptJsonl({ rounds: 8, variant: 'o' }) });
    dirs.push(dir);
    const run = async <T>(body: (c: ContextdClient) => Promise<T>): Promise<T> => {
      const { c, stop } = await startDaemon(dir);
      try {
        return await body(c);
      } finally {
        await stop();
      }
    };
    const open = await run(async (c) => {
      const id = ((await c.status()) as unknown as DaemonStatus).sessions[0]?.sessionId as string;
      return (await c.compact(id, { targetHeadroom: 0.9999 })).planId; // never answered
    });
    const refused = await run(async (c) => c.ack({ planId: open, applied: true }).then(() => undefined, (err: unknown) => err as Error));
    expect(refused?.message).toMatch(/has expired or was superseded/);
    // stored as such (it read "proposed" for good, and was never pruned)
    expect(inState(dir, (db) => new PlanLog(db).get(open))).toMatchObject({ status: 'expired', statusReason: 'contextd restarted: the plan was open when it stopped' });
  }, 90_000);

  it('prunes what earlier runs left when a session opens, however few plans each run made', async () => {
    const dir = sessionsDir('contextd-planlog-runs-', { runs: demoTranscriptJsonl({ rounds: 8, variant: 'n' }) });
    dirs.push(dir);
    const declined: string[] = [];
    const first = await startDaemon(dir);
    try {
      const id = ((await first.c.status()) as unknown as DaemonStatus).sessions[0]?.sessionId as string;
      for (let i = 0; i < 30; i++) {
        const p = await first.c.compact(id, { targetHeadroom: 0.9999 });
        declined.push(p.planId);
        await first.c.ack({ planId: p.planId, applied: false, reason: 'test: declined' });
      }
    } finally {
      await first.stop();
    }
    const bodies = (): number =>
      inState(dir, (db) => {
        const plans = new PlanLog(db);
        return declined.filter((p) => plans.get(p)?.plan !== undefined).length;
      });
    expect(bodies()).toBeGreaterThan(KEEP_ENDED_PLAN_BODIES); // pruned once, at the 20th plan
    const second = await startDaemon(dir); // no plan made in this run
    await second.stop();
    expect(bodies()).toBe(KEEP_ENDED_PLAN_BODIES);
  }, 90_000);

  it('drops an applied plan\'s body once its transcript is rewritten (nothing replays it), and keeps its row', async () => {
    const dir = sessionsDir('contextd-planlog-rewritten-', { rewritten: demoTranscriptJsonl({ rounds: 8, variant: 'w' }) });
    dirs.push(dir);
    const file = join(dir, 'sessions', 'rewritten.jsonl');
    const { c, stop } = await startDaemon(dir);
    let applied = '';
    let id = '';
    try {
      const session = ((await c.status()) as unknown as DaemonStatus).sessions[0];
      id = session?.sessionId as string;
      const plan = await c.compact(id, { targetHeadroom: 0.9999 });
      await c.ack({ planId: plan.planId, applied: true });
      applied = plan.planId;
      const edited = (await c.status()) as unknown as DaemonStatus;
      const tokens = edited.sessions[0]?.tokens as number;
      // rewritten in place, shorter: the session's model is built from its lines alone
      const lines = readFileSync(file, 'utf8').split('\n');
      writeFileSync(file, `${lines.slice(0, Math.floor(lines.length / 3)).join('\n')}\n`);
      await until('the rewritten transcript read', async () => {
        const s = ((await c.status()) as unknown as DaemonStatus).sessions.find((x) => x.sessionId === id);
        return s && s.tokens !== tokens ? s : undefined;
      });
    } finally {
      await stop();
    }
    inState(dir, (db) => {
      expect(new ModelSteps(db).load(id)).toBeUndefined();
      expect(new PlanLog(db).get(applied)).toMatchObject({ status: 'applied', plan: undefined });
    });
  }, 90_000);
});
