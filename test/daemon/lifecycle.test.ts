import { describe, expect, it } from 'vitest';
import { SessionLifecycle, fedSessionsOfGoneClients, fedSessionsToMakeRoom, idleSessionsToRelease, sessionsToRelease, zoneOf, type HeldSession, type ThrottleOptions } from '../../src/daemon/lifecycle.js';
import type { Plan } from '../../src/compact/index.js';

// Pure: no sockets, no timers, no SQLite — the clock and facts are passed in.
const o: ThrottleOptions = { reserveRatio: 0.15, softWatermark: 0.6, minPlanIntervalMs: 5_000, advisoryPlanIntervalMs: 60_000 };

function plan(id: string): Plan {
  return { planId: id, edits: [] } as unknown as Plan;
}

describe('SessionLifecycle', () => {
  it('plans follow the zone: nothing in ok, soft past the watermark, reserve below the reserve', () => {
    const l = new SessionLifecycle(0);
    expect(l.nextStep('ok', 1, true, 0, o)).toEqual({ kind: 'none' });
    expect(l.nextStep('soft', 1, true, 0, o)).toEqual({ kind: 'plan', mode: 'soft', advisory: false });
    expect(l.nextStep('reserve', 1, true, 0, o)).toEqual({ kind: 'plan', mode: 'reserve', advisory: false });
    expect(zoneOf({ headroom: 0.5 }, o)).toBe('ok');
    expect(zoneOf({ headroom: 0.3 }, o)).toBe('soft');
    expect(zoneOf({ headroom: 0.1 }, o)).toBe('reserve');
  });

  it('a plan of an older model version never supersedes an open plan of a newer one (of the same model)', () => {
    const l = new SessionLifecycle(0);
    const at = (id: string, modelVersion: number): Plan => ({ planId: id, edits: [], modelVersion }) as unknown as Plan;
    l.propose(at('p9', 9), true);
    expect(l.hasNewerThan(at('p7', 7))).toBe(true);
    expect(l.hasNewerThan(at('p9b', 9))).toBe(false); // the same model planned again (session.compact) may
    expect(l.hasNewerThan(at('p12', 12))).toBe(false);
    // A rebuilt model starts its versions over: its open plans expire and are no measure.
    l.rebuilt();
    expect(l.hasNewerThan(at('q2', 2))).toBe(false);
  });

  it('does not re-plan an unchanged model, nor while a plan is being made', () => {
    const l = new SessionLifecycle(0);
    l.planStarted(7, 0, false);
    expect(l.nextStep('soft', 8, true, 10_000, o)).toEqual({ kind: 'none' });
    l.planFinished();
    expect(l.nextStep('soft', 7, true, 10_000, o)).toEqual({ kind: 'none' });
    expect(l.nextStep('soft', 8, true, 10_000, o).kind).toBe('plan');
  });

  it('an advisory plan never delays the first push: a late subscriber gets the open plan at once', () => {
    const l = new SessionLifecycle(0);
    // Nobody subscribed: an advisory plan is made, then the advisory throttle holds the next one.
    expect(l.nextStep('soft', 1, false, 0, o)).toEqual({ kind: 'plan', mode: 'soft', advisory: true });
    l.planStarted(1, 0, true);
    l.planFinished();
    expect(l.propose(plan('p1'), false)).toEqual([]);
    expect(l.nextStep('soft', 2, false, 1_000, o)).toEqual({ kind: 'wait', until: 60_000 });
    // A subscriber arrives 1 s later: the current plan is handed over, no timer involved.
    expect(l.onSubscribe(1_000)?.plan.planId).toBe('p1');
  });

  it('a late subscriber with no open plan gets a fresh plan at once, whatever the advisory throttle says', () => {
    const l = new SessionLifecycle(0);
    l.planStarted(1, 0, true);
    l.planFinished(); // nothing to compact, or the plan was dropped: nothing open
    expect(l.nextStep('reserve', 1, false, 1_000, o).kind).toBe('none'); // unchanged model
    expect(l.onSubscribe(1_000)).toBeUndefined();
    expect(l.nextStep('reserve', 1, true, 1_000, o)).toEqual({ kind: 'plan', mode: 'reserve', advisory: false });
  });

  it('pushed plans are throttled from the last push only; the reserve with no plan in hand cannot wait', () => {
    const l = new SessionLifecycle(0);
    l.planStarted(1, 0, false);
    l.planFinished();
    l.propose(plan('p1'), true);
    expect(l.nextStep('soft', 2, true, 1_000, o)).toEqual({ kind: 'wait', until: 5_000 });
    expect(l.nextStep('soft', 2, true, 5_000, o).kind).toBe('plan');
    // The agent rejected p1: nothing in its hands, and the reserve was crossed.
    l.answered('p1');
    expect(l.nextStep('reserve', 2, true, 1_000, o)).toEqual({ kind: 'plan', mode: 'reserve', advisory: false });
  });

  it('a newer plan supersedes the open one; a rebuild expires all and starts over', () => {
    const l = new SessionLifecycle(0);
    l.propose(plan('p1'), true);
    expect(l.propose(plan('p2'), true)).toEqual(['p1']);
    expect(l.openPlanCount).toBe(1);
    l.lastPlannedVersion = 9;
    expect(l.rebuilt()).toEqual(['p2']);
    expect(l.openPlanCount).toBe(0);
    expect(l.lastPlannedVersion).toBe(-1);
    expect(l.lastLogged).toBeUndefined();
  });

  it('ended is set by end() and cleared only by new messages', () => {
    const l = new SessionLifecycle(0);
    expect(l.end()).toBe(true);
    expect(l.end()).toBe(false);
    l.touched(5, false);
    expect(l.ended).toBe(true);
    expect(l.lastActivityAt).toBe(5);
    l.touched(6, true);
    expect(l.ended).toBe(false);
  });

  it('logs a sample on start, on a zone change and on a move of a point or more', () => {
    const l = new SessionLifecycle(0);
    expect(l.observe({ headroom: 0.9 }, o)).toEqual({ zone: 'ok', logReason: 'start', zoneChange: { zone: 'ok', previous: undefined } });
    expect(l.observe({ headroom: 0.895 }, o).logReason).toBeUndefined();
    expect(l.observe({ headroom: 0.88 }, o).logReason).toBe('moved');
    expect(l.observe({ headroom: 0.3 }, o)).toEqual({ zone: 'soft', logReason: 'zone:ok->soft', zoneChange: { zone: 'soft', previous: 'ok' } });
  });
});

describe('memory budget decisions', () => {
  const budget = { maxSessionTokens: 1_000, releaseAfterMs: 60_000, idleReleaseMs: 0 };
  const held = (sessionId: string, tokens: number, lastActivityAt: number, extra: Partial<HeldSession> = {}): HeldSession => ({ sessionId, tokens, lastActivityAt, releasable: true, subscribed: false, ...extra });

  it('releases nothing within the budget, or with no bound (0)', () => {
    expect(sessionsToRelease([held('a', 600, 1), held('b', 400, 2)], budget, 10)).toEqual([]);
    expect(sessionsToRelease([held('a', 6_000, 1), held('b', 4_000, 2)], { ...budget, maxSessionTokens: 0 }, 10)).toEqual([]);
  });

  it('over the budget, releases the least recently active first, only until the total fits', () => {
    const s = [held('new', 500, 30), held('old', 400, 10), held('mid', 300, 20)];
    expect(sessionsToRelease(s, budget, 40)).toEqual(['old']);
    expect(sessionsToRelease([...s, held('newest', 600, 35)], budget, 40)).toEqual(['old', 'mid', 'new']);
  });

  it('skips sessions that cannot be released, and subscribed ones until idle past releaseAfterMs', () => {
    const s = [held('pinned', 900, 1, { releasable: false }), held('followed', 500, 2, { subscribed: true }), held('free', 100, 3)];
    expect(sessionsToRelease(s, budget, 60_001)).toEqual(['free']);
    expect(sessionsToRelease(s, budget, 60_002)).toEqual(['followed']);
  });

  it('idle release: every releasable session idle past idleReleaseMs (a subscribed one past releaseAfterMs too), whatever the total; none at 0', () => {
    const idle = { ...budget, idleReleaseMs: 300_000 };
    const s = [held('idle', 10, 0), held('busy', 10, 250_000), held('pinned', 10, 0, { releasable: false }), held('empty', 0, 0), held('followed', 10, 0, { subscribed: true })];
    expect(idleSessionsToRelease(s, idle, 300_000)).toEqual(['idle', 'followed']);
    expect(idleSessionsToRelease(s, { ...idle, releaseAfterMs: 400_000 }, 300_000)).toEqual(['idle']);
    expect(idleSessionsToRelease(s, idle, 550_000)).toEqual(['idle', 'busy', 'followed']);
    expect(idleSessionsToRelease(s, budget, 10_000_000)).toEqual([]);
  });

  it('fed sessions: room for one more under maxFedSessions from the least recently synced idle ones, or none released when too few can go', () => {
    const fed = { ...budget, maxFedSessions: 3 };
    const s = [held('connected-old', 10, 0, { fed: true, subscribed: true }), held('gone', 10, 50_000, { fed: true }), held('connected-new', 10, 55_000, { fed: true, subscribed: true }), held('tailed', 10, 0)];
    // three fed sessions in memory: one must go; the client-less one goes before a connected one not idle yet
    expect(fedSessionsToMakeRoom(s, fed, 59_999)).toEqual(['gone']);
    // a connected one idle past releaseAfterMs is older still
    expect(fedSessionsToMakeRoom(s, fed, 60_000)).toEqual(['connected-old']);
    expect(fedSessionsToMakeRoom(s, { ...fed, maxFedSessions: 4 }, 0)).toEqual([]);
    expect(fedSessionsToMakeRoom(s, { ...fed, maxFedSessions: 0 }, 0)).toEqual([]);
    // the bound lowered to 1: three must go, two can: refused, none released for it
    expect(fedSessionsToMakeRoom(s, { ...fed, maxFedSessions: 1 }, 59_999)).toBeUndefined();
    // a plan in a connected client's hands keeps its session
    expect(fedSessionsToMakeRoom(s.map((h) => ({ ...h, releasable: h.sessionId !== 'gone' })), fed, 59_999)).toBeUndefined();
    // client gone: after releaseAfterMs without a sync, whatever the bound
    expect(fedSessionsOfGoneClients(s, fed, 109_999)).toEqual([]);
    expect(fedSessionsOfGoneClients(s, fed, 110_000)).toEqual(['gone']);
  });

  it('a session is releasable only with no plan under way or pushed and unanswered (an applied edit is replayed on rebuild)', () => {
    const l = new SessionLifecycle(0);
    expect(l.releasable).toBe(true);
    l.planStarted(3, 0, false);
    expect(l.releasable).toBe(false);
    l.planFinished();
    l.propose(plan('p1'), true);
    expect(l.releasable).toBe(false);
    l.answered('p1');
    l.applied({ reason: 'stale-tool-output', at: 1, planId: 'p1' }, 4);
    expect(l.releasable).toBe(true);
    // An advisory plan (nobody was handed it) does not pin the model: it expires on release.
    l.propose(plan('p2'), false);
    expect(l.releasable).toBe(true);
    expect(l.releasing()).toEqual(['p2']);
    expect(l.openPlanCount).toBe(0);
  });

  it('a rebuilt model keeps "already planned from" only when it was planned from at release', () => {
    const l = new SessionLifecycle(0);
    l.planStarted(7, 0, true);
    l.planFinished();
    l.released(7);
    l.restored(2);
    expect(l.nextStep('soft', 2, false, 1e9, o)).toEqual({ kind: 'none' });
    l.released(9);
    l.restored(3);
    expect(l.nextStep('soft', 3, false, 1e9, o)).toEqual({ kind: 'plan', mode: 'soft', advisory: true });
    // Planned from at release, but that plan was advisory and expired with the release: planned from again.
    l.planStarted(3, 1e9, true);
    l.planFinished();
    l.propose(plan('p3'), false);
    expect(l.releasing()).toEqual(['p3']);
    l.released(3);
    l.restored(4);
    expect(l.nextStep('soft', 4, false, 3e9, o)).toEqual({ kind: 'plan', mode: 'soft', advisory: true });
  });
});
