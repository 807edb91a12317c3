/**
 * The one owner of a live session's lifecycle, as data: its zone, what headroom was last
 * logged, the planning throttle, the open plans awaiting an ack, and whether it has ended.
 *
 * Pure: no timers, sockets or SQLite. The caller passes the clock and facts in (headroom,
 * model version, whether a client subscribed) and gets decisions back (log this sample,
 * the zone changed, plan now in this mode, wake me at T, push this open plan). The session
 * manager carries the decisions out.
 *
 * Plan rules ("plans follow the zone, not a timer"):
 *  - in the `ok` zone nothing is planned; in `soft` a soft plan, in `reserve` a reserve plan;
 *  - nothing is re-planned until the model changed since the last plan (version);
 *  - pushed plans (someone subscribed) are at most one per `minPlanIntervalMs`, counted
 *    from the last PUSHED plan only;
 *  - advisory plans (nobody subscribed) are made at most one per `advisoryPlanIntervalMs`;
 *    they are logged and stored, and never delay a push: a subscriber arriving gets the
 *    current open plan at once, or a fresh plan at once when there is none;
 *  - a `reserve` crossing plans at once whatever the throttle says.
 */
import type { Plan, PlanMode } from '../compact/index.js';
import type { HeadroomSnapshot } from '../model/types.js';

/** Where a session's usage sits relative to the two watermarks (design §5). */
export type Zone = 'ok' | 'soft' | 'reserve';

/** Watermarks as shares of the budget. */
export interface Watermarks {
  /** Share used from which cheap cruft is compacted (default 0.60). */
  readonly softWatermark: number;
  /** Share kept free (default 0.15): below it, plan back to reserve + hysteresis. */
  readonly reserveRatio: number;
}

/** The planning throttle. */
export interface ThrottleOptions extends Watermarks {
  /** Least time between two plans pushed to subscribers of one session. */
  readonly minPlanIntervalMs: number;
  /** Least time between two advisory plans (nobody subscribed) of one session. */
  readonly advisoryPlanIntervalMs: number;
}

/** Advisory plans (nobody subscribed) are made at most this often per session by default. */
export const ADVISORY_PLAN_INTERVAL_MS = 60_000;

/** The zone a headroom snapshot falls in. */
export function zoneOf(h: Pick<HeadroomSnapshot, 'headroom'>, w: Watermarks): Zone {
  const used = 1 - h.headroom;
  if (h.headroom < w.reserveRatio) return 'reserve';
  if (used >= w.softWatermark) return 'soft';
  return 'ok';
}

/** Why a headroom sample is logged, or undefined when it need not be (moved < 1 point, same zone). */
export function headroomLogReason(previous: { headroom: number; zone: Zone } | undefined, current: { headroom: number; zone: Zone }): string | undefined {
  if (!previous) return 'start';
  if (previous.zone !== current.zone) return `zone:${previous.zone}->${current.zone}`;
  if (Math.abs(previous.headroom - current.headroom) >= 0.01) return 'moved';
  return undefined;
}

/** What `observe` found. */
export interface Observation {
  readonly zone: Zone;
  /** Log (and store) a headroom sample for this reason. */
  readonly logReason: string | undefined;
  /** Set when the zone changed since the last logged sample. */
  readonly zoneChange: { readonly zone: Zone; readonly previous: Zone | undefined } | undefined;
}

/** What to do about planning now. */
export type PlanStep =
  | { readonly kind: 'none' }
  | { readonly kind: 'plan'; readonly mode: PlanMode; readonly advisory: boolean }
  | { readonly kind: 'wait'; readonly until: number };

/** A plan proposed and not yet answered. */
export interface OpenPlan {
  readonly plan: Plan;
  /** The model generation it was made from: a rebuilt model expires it. */
  readonly generation: number;
  /** Whether it was pushed to a subscriber (else it is advisory). */
  pushed: boolean;
}

/** The last edit the agent applied (for status). */
export interface LastEdit {
  readonly reason: string;
  readonly at: number;
  readonly planId: string;
}

/** One session's lifecycle state and its transitions. */
export class SessionLifecycle {
  /** The last logged sample (headroom and zone). */
  lastLogged: { readonly headroom: number; readonly zone: Zone } | undefined;
  /** Model version the last plan was made from: no re-plan until the model changes. */
  lastPlannedVersion = -1;
  /** Bumped whenever the model is rebuilt (transcript rewritten, budget changed). */
  generation = 0;
  /** A plan is being made. */
  planning = false;
  lastPushedAt = Number.NEGATIVE_INFINITY;
  lastAdvisoryAt = Number.NEGATIVE_INFINITY;
  lastActivityAt: number;
  lastEdit: LastEdit | undefined;
  private endedValue = false;
  /** Whether the model had been planned from when it was released from memory. */
  private plannedAtRelease = false;
  private readonly open = new Map<string, OpenPlan>();

  constructor(now: number) {
    this.lastActivityAt = now;
  }

  /** True once the session finished (session.end or idle) and until it grows again. */
  get ended(): boolean {
    return this.endedValue;
  }

  /** The session finished (session.end, or idle). Returns false when it had already ended. */
  end(): boolean {
    if (this.endedValue) return false;
    this.endedValue = true;
    return true;
  }

  /** New events arrived. New messages after an end resume the session. */
  touched(now: number, newMessages: boolean): void {
    this.lastActivityAt = now;
    if (newMessages) this.endedValue = false;
  }

  /** The headroom now: decide whether to log it and whether the zone changed. */
  observe(h: Pick<HeadroomSnapshot, 'headroom'>, w: Watermarks, forcedReason?: string): Observation {
    const zone = zoneOf(h, w);
    const previous = this.lastLogged;
    const logReason = forcedReason ?? headroomLogReason(previous, { headroom: h.headroom, zone });
    if (!logReason) return { zone, logReason: undefined, zoneChange: undefined };
    this.lastLogged = { headroom: h.headroom, zone };
    return { zone, logReason, zoneChange: previous?.zone !== zone ? { zone, previous: previous?.zone } : undefined };
  }

  /** Whether (and when) to plan, for a model at `version` in `zone`. */
  nextStep(zone: Zone, version: number, subscribed: boolean, now: number, o: ThrottleOptions): PlanStep {
    if (zone === 'ok' || this.planning || version === this.lastPlannedVersion) return { kind: 'none' };
    const mode: PlanMode = zone === 'reserve' ? 'reserve' : 'soft';
    if (subscribed) {
      // Crossing into the reserve with no plan in the agent's hands cannot wait for the throttle.
      const urgent = zone === 'reserve' && !this.hasCurrentPushedPlan();
      const until = this.lastPushedAt + o.minPlanIntervalMs;
      return urgent || until <= now ? { kind: 'plan', mode, advisory: false } : { kind: 'wait', until };
    }
    const until = this.lastAdvisoryAt + Math.max(o.minPlanIntervalMs, o.advisoryPlanIntervalMs);
    return until > now ? { kind: 'wait', until } : { kind: 'plan', mode, advisory: true };
  }

  /** A plan is being made from `version` (not for dry runs). */
  planStarted(version: number, now: number, advisory: boolean): void {
    this.planning = true;
    this.lastPlannedVersion = version;
    if (advisory) this.lastAdvisoryAt = now;
    else this.lastPushedAt = now;
  }

  /** The plan under way finished (made, dropped or failed). */
  planFinished(): void {
    this.planning = false;
  }

  /**
   * A plan was made and is proposed: older open plans are superseded. Returns their ids
   * (to mark expired).
   */
  propose(plan: Plan, pushed: boolean): string[] {
    const superseded = [...this.open.keys()];
    this.open.clear();
    this.open.set(plan.planId, { plan, generation: this.generation, pushed });
    return superseded;
  }

  /**
   * Whether an open plan of this generation was made from a later model version than `plan`:
   * then `plan` (made earlier, finished later) must not supersede it.
   */
  hasNewerThan(plan: Pick<Plan, 'modelVersion'>): boolean {
    for (const p of this.open.values()) if (p.generation === this.generation && p.plan.modelVersion > plan.modelVersion) return true;
    return false;
  }

  /**
   * A client subscribed: the open plan still current for this model generation (to push at
   * once), or undefined when a fresh plan is needed. Marks it pushed.
   */
  onSubscribe(now: number): OpenPlan | undefined {
    for (const p of this.open.values()) {
      if (p.generation !== this.generation) continue;
      p.pushed = true;
      this.lastPushedAt = now;
      return p;
    }
    // Nothing to hand over: allow a fresh plan from the current model at once.
    this.lastPlannedVersion = -1;
    this.lastPushedAt = Number.NEGATIVE_INFINITY;
    return undefined;
  }

  /** The open plan with this id, if any. */
  openPlan(planId: string): OpenPlan | undefined {
    return this.open.get(planId);
  }

  /** Forget an answered plan. */
  answered(planId: string): void {
    this.open.delete(planId);
  }

  /** The agent applied edits of a plan made from `version`: the model moved on by itself. */
  applied(edit: LastEdit, version: number): void {
    this.lastEdit = edit;
    this.lastPlannedVersion = version;
  }

  /** Number of open plans. */
  get openPlanCount(): number {
    return this.open.size;
  }

  /** Drop every open plan (their ids, to mark expired). */
  expireAll(): string[] {
    const ids = [...this.open.keys()];
    this.open.clear();
    return ids;
  }

  /** The model was rebuilt from scratch: plans expire, planning and logging start over. */
  rebuilt(): string[] {
    this.generation++;
    this.lastPlannedVersion = -1;
    this.lastLogged = undefined;
    return this.expireAll();
  }

  /**
   * Whether the model may be released from memory and rebuilt later, as far as its plans go: no
   * plan is being made, and none pushed to a client awaits its answer (an advisory one expires
   * on release: `releasing`; edits the agent applied are replayed: replay-log.ts).
   */
  get releasable(): boolean {
    if (this.planning) return false;
    for (const p of this.open.values()) if (p.pushed) return false;
    return true;
  }

  /**
   * The model leaves memory: its open plans, advisory ones (`releasable`), expire. Returns their
   * ids. A plan expired so is no longer the model's plan: the rebuilt model is planned from again.
   */
  releasing(): string[] {
    const ids = this.expireAll();
    if (ids.length > 0) this.lastPlannedVersion = -1;
    return ids;
  }

  /**
   * The model at `version` was released from memory; `unapplied`: lines read but not applied
   * were dropped with it (the rebuild reads them from the transcript, so it was not planned from).
   */
  released(version: number, unapplied = false): void {
    this.plannedAtRelease = !unapplied && this.lastPlannedVersion === version;
  }

  /** The model was rebuilt from the transcript (now at `version`): planned-from stays as it was. */
  restored(version: number): void {
    this.lastPlannedVersion = this.plannedAtRelease ? version : -1;
  }

  private hasCurrentPushedPlan(): boolean {
    for (const p of this.open.values()) if (p.pushed && p.generation === this.generation) return true;
    return false;
  }
}

/** The memory budget of tailed session models (config `memory`). */
export interface MemoryBudget {
  /** Tokens all in-memory tailed session models may hold together (0 = no bound). */
  readonly maxSessionTokens: number;
  /** A subscribed session is released only after this long without an append. */
  readonly releaseAfterMs: number;
  /** A session with no append for this long is released even while the total is within the budget (0 = never). */
  readonly idleReleaseMs: number;
  /**
   * Sessions fed over the socket (`session.sync`) whose model may be in memory at once (0 = no
   * bound; default MEMORY_DEFAULTS): one more releases the least recently synced idle one, or
   * is refused.
   */
  readonly maxFedSessions?: number;
}

/**
 * Defaults of `memory`. 5 M tokens: under planning load a held token costs 110–150 bytes of RSS
 * at the peak (30–60 of live heap, and V8's garbage between full collections) on top of ~250 MiB,
 * which keeps that peak under 1 GiB (docs/configuration.md, memory budget; `bench load`). 64 fed
 * sessions: far more agents feeding the daemon at once than one machine runs, each on its own
 * connection, while one client alone can no longer hold an unbounded number of them.
 */
export const MEMORY_DEFAULTS: Required<MemoryBudget> = Object.freeze({ maxSessionTokens: 5_000_000, releaseAfterMs: 60_000, idleReleaseMs: 300_000, maxFedSessions: 64 });

/** One in-memory session as the budget sees it. */
export interface HeldSession {
  readonly sessionId: string;
  readonly tokens: number;
  readonly lastActivityAt: number;
  /** `SessionLifecycle.releasable`, and rebuildable from a transcript at all. */
  readonly releasable: boolean;
  readonly subscribed: boolean;
  /** Fed over the socket (`session.sync`): rebuilt from the agent's next list, not from a transcript. */
  readonly fed?: boolean;
}

/**
 * Which sessions to release so the models held stay within the budget: none while the total
 * is within it; else the least recently active releasable ones, oldest first, until it is
 * (a subscribed session only once idle for `releaseAfterMs`). May leave the total over the
 * budget when too few sessions can go.
 */
export function sessionsToRelease(held: readonly HeldSession[], budget: MemoryBudget, now: number): string[] {
  if (budget.maxSessionTokens <= 0) return [];
  let total = held.reduce((n, h) => n + h.tokens, 0);
  if (total <= budget.maxSessionTokens) return [];
  // an empty model frees nothing (and a transcript read to offset 0 has nothing to rebuild from)
  const order = held.filter((h) => h.releasable && h.tokens > 0 && (!h.subscribed || now - h.lastActivityAt >= budget.releaseAfterMs)).sort((a, b) => a.lastActivityAt - b.lastActivityAt);
  const out: string[] = [];
  for (const h of order) {
    if (total <= budget.maxSessionTokens) break;
    out.push(h.sessionId);
    total -= h.tokens;
  }
  return out;
}

/**
 * Which sessions to release because they have been idle: every releasable one with no append
 * for `idleReleaseMs` (and, when subscribed, for `releaseAfterMs`), whatever the total.
 */
export function idleSessionsToRelease(held: readonly HeldSession[], budget: MemoryBudget, now: number): string[] {
  if (budget.idleReleaseMs <= 0) return [];
  const after = (h: HeldSession): number => (h.subscribed ? Math.max(budget.idleReleaseMs, budget.releaseAfterMs) : budget.idleReleaseMs);
  return held.filter((h) => h.releasable && h.tokens > 0 && now - h.lastActivityAt >= after(h)).map((h) => h.sessionId);
}

/**
 * Which fed sessions to release so that one more fits under `memory.maxFedSessions`: the least
 * recently synced releasable ones, oldest first, that no connected client synced within
 * `releaseAfterMs` (a fed session no client is connected to may go at once). Undefined when
 * too few can go: the new one is refused (and none is released for it).
 */
export function fedSessionsToMakeRoom(held: readonly HeldSession[], budget: MemoryBudget, now: number): string[] | undefined {
  const max = budget.maxFedSessions ?? MEMORY_DEFAULTS.maxFedSessions;
  if (max <= 0) return [];
  const fed = held.filter((h) => h.fed === true);
  const excess = fed.length - max + 1;
  if (excess <= 0) return [];
  const order = fed.filter((h) => h.releasable && (!h.subscribed || now - h.lastActivityAt >= budget.releaseAfterMs)).sort((a, b) => a.lastActivityAt - b.lastActivityAt);
  return order.length >= excess ? order.slice(0, excess).map((h) => h.sessionId) : undefined;
}

/**
 * Fed sessions no client is connected to any more, not synced for `releaseAfterMs`: released
 * whatever the budget (their agent, if it comes back, sends its whole list again).
 */
export function fedSessionsOfGoneClients(held: readonly HeldSession[], budget: MemoryBudget, now: number): string[] {
  return held.filter((h) => h.fed === true && h.releasable && !h.subscribed && now - h.lastActivityAt >= budget.releaseAfterMs).map((h) => h.sessionId);
}
