import { EventEmitter } from 'node:events';
import type { TranscriptFormat } from '../ingest/types.js';
import type { Message, TranscriptEvent } from '../model/messages.js';
import { SessionModel } from '../model/index.js';
import type { TokenCounter } from '../model/tokens.js';
import { applyPlan, planCompaction, type Plan, type PlanMode, type Summarizer } from '../compact/index.js';
import type { Archive, HeadroomLog, PlanLog } from '../store/index.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { LiveSession, headroomLogReason, zoneOf, type Zone } from './live-session.js';

/** The tunables of the compaction loop (a slice of DaemonOptions). */
export interface LoopOptions {
  readonly budgetTokens: number | undefined;
  readonly reserveRatio: number;
  readonly softWatermark: number;
  readonly hysteresis: number;
  readonly minPlanIntervalMs: number;
}

export interface SessionManagerDeps {
  readonly logger: Logger;
  readonly tokenCounter: TokenCounter;
  readonly summarizer: Summarizer;
  readonly headroomLog: HeadroomLog;
  readonly archive: Archive;
  readonly plans: PlanLog;
  readonly now?: () => number;
  /** Whether any client subscribed to a session (plans for others are advisory). */
  readonly hasSubscribers?: (sessionId: string) => boolean;
}

/** Advisory plans (nobody subscribed) are made at most this often per session. */
export const ADVISORY_PLAN_INTERVAL_MS = 60_000;

export interface SessionManagerEvents {
  /** A plan was made and stored; the daemon pushes it to subscribers, or marks it advisory. */
  plan: [session: LiveSession, plan: Plan];
  /** Headroom crossed a watermark. */
  zone: [session: LiveSession, zone: Zone, previous: Zone | undefined];
}

/** A plan waiting for the agent's ack. */
interface OpenPlan {
  readonly plan: Plan;
  readonly session: LiveSession;
  /** The model the plan was made from; a rebuilt session expires it. */
  readonly model: SessionModel;
}

/**
 * Keeps one SessionModel per live session, logs headroom, and runs the compaction loop:
 * past the soft watermark or the reserve it plans (off the ingest path), archives the
 * originals, records the plan, and emits it for the daemon to push.
 */
export class SessionManager extends EventEmitter<SessionManagerEvents> {
  private readonly sessions = new Map<string, LiveSession>();
  private readonly byFile = new Map<string, LiveSession>();
  private readonly openPlans = new Map<string, OpenPlan>();
  /** session.compact requests being planned (awaited on shutdown). */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly log: Logger;
  private readonly now: () => number;
  private options: LoopOptions;
  private closing = false;

  constructor(options: LoopOptions, private readonly deps: SessionManagerDeps) {
    super();
    this.options = options;
    this.log = deps.logger.child({ component: 'sessions' });
    this.now = deps.now ?? Date.now;
  }

  /**
   * Replace the loop's tunables (SIGHUP). Models are rebuilt only when the budget or reserve
   * changed; a rebuild renumbers sections, so the open plans of that session expire.
   */
  reconfigure(options: LoopOptions): void {
    const rebuild = options.budgetTokens !== this.options.budgetTokens || options.reserveRatio !== this.options.reserveRatio;
    this.options = options;
    for (const s of this.sessions.values()) {
      if (rebuild) {
        const fresh = this.newModel(s.sessionId, s.fed ? s.fed.budgetTokens : options.budgetTokens);
        fresh.applyAll(this.replayable(s));
        if (s.fed) s.fed = { ...s.fed, version: -1 };
        s.model = fresh;
        s.lastPlannedVersion = -1;
        this.expirePlansOf(s.sessionId, 'budget reconfigured');
      }
      this.afterChange(s);
    }
  }

  get(sessionId: string): LiveSession | undefined {
    return this.sessions.get(sessionId);
  }

  /** The session with this id, or a coded error a client can act on. */
  require(sessionId: string): LiveSession {
    const s = this.sessions.get(sessionId);
    if (!s) throw new ContextdError(ErrorCode.UNKNOWN_SESSION, `unknown session "${sessionId}": it is not being watched (see daemon.status for live sessions)`, { sessionId });
    return s;
  }

  byTranscript(file: string): LiveSession | undefined {
    return this.byFile.get(file);
  }

  all(): LiveSession[] {
    return [...this.sessions.values()];
  }

  /** Events read from a transcript: apply them and react to the new headroom. */
  ingest(file: string, sessionId: string, format: TranscriptFormat, events: readonly TranscriptEvent[]): LiveSession {
    let s = this.sessions.get(sessionId);
    if (s?.fed) {
      // The agent feeds this session itself (session.sync): what it sends is what the model
      // sees, so a transcript of the same id is not mixed in.
      this.log.debug({ sessionId, file }, 'transcript lines ignored: the session is fed over the socket');
      return s;
    }
    if (!s) {
      s = new LiveSession(sessionId, file, format, this.newModel(sessionId), this.now());
      this.sessions.set(sessionId, s);
      this.byFile.set(file, s);
      this.log.info({ sessionId, file, format }, 'session opened');
    }
    s.model.applyAll(events);
    s.lastActivityAt = this.now();
    // New messages after a harvest: the session was resumed and may be harvested again
    // (harvest skips a session that has not grown, and counts evidence per session).
    if (events.some((e) => e.type === 'message')) s.ended = false;
    // The agent compacted or rewound its own context: sections the open plans name are gone.
    if (events.some((e) => e.type === 'reset' || e.type === 'truncate')) this.expirePlansOf(sessionId, 'the agent rewrote its context');
    this.afterChange(s);
    return s;
  }

  /**
   * The agent's own message list for a session (`session.sync`), in order, as normalized
   * messages with stable ids. When the list shares a prefix with the last one fed (and the
   * model is unchanged since), what differs after it is truncated and the rest appended; any
   * other list (an edit applied, the agent's own compaction, a new budget) rebuilds the model. Creates the session when it is new; a tailed session of the
   * same id is taken over. Message indexes of later plans are indexes into this list.
   */
  feed(sessionId: string, messages: readonly Message[], budgetTokens: number | undefined): { session: LiveSession; rebuilt: boolean } {
    let s = this.sessions.get(sessionId);
    if (!s) {
      s = new LiveSession(sessionId, `socket:${sessionId}`, 'openai-chat', this.newModel(sessionId, budgetTokens), this.now());
      this.sessions.set(sessionId, s);
      this.log.info({ sessionId, messages: messages.length }, 'session opened (fed over the socket)');
    }
    const ids = messages.map((m) => m.id);
    const f = s.fed;
    // Messages shared with the last list fed (an agent's request often ends in ephemeral
    // messages that the next one replaces): the rest of the old list is truncated away.
    let common = 0;
    if (f !== undefined && f.version === s.model.version && f.budgetTokens === budgetTokens) {
      while (common < f.ids.length && common < ids.length && f.ids[common] === ids[common]) common++;
    }
    const extends_ = f !== undefined && common > 0;
    let fresh: readonly Message[] = messages;
    const events: TranscriptEvent[] = [];
    if (extends_) {
      if (common < f.ids.length) events.push({ type: 'truncate', keepThroughId: ids[common - 1] as string, reason: 'the agent sent a shorter or different tail' });
      fresh = messages.slice(common);
    } else {
      if (f === undefined && s.file !== `socket:${sessionId}`) this.log.info({ sessionId, file: s.file }, 'session now fed over the socket; its transcript is no longer read into the model');
      s.model = this.newModel(sessionId, budgetTokens);
      s.lastPlannedVersion = -1;
      this.expirePlansOf(sessionId, 'the agent sent a different context');
    }
    for (const message of fresh) events.push({ type: 'message', message });
    s.model.applyAll(events);
    s.fed = { ids, version: s.model.version, budgetTokens };
    s.lastActivityAt = this.now();
    if (fresh.length > 0) s.ended = false;
    this.afterChange(s);
    return { session: s, rebuilt: !extends_ };
  }

  /** The watermarks sessions are judged by (for clients that compute zones). */
  watermarks(): { reserveRatio: number; softWatermark: number; hysteresis: number } {
    return { reserveRatio: this.options.reserveRatio, softWatermark: this.options.softWatermark, hysteresis: this.options.hysteresis };
  }

  /** The transcript was truncated or replaced: drop the model; the tailer re-reads from 0. */
  resetSession(file: string, sessionId: string, reason: string): void {
    const s = this.sessions.get(sessionId);
    if (!s || s.fed) return;
    s.model = this.newModel(sessionId);
    s.lastPlannedVersion = -1;
    s.lastLogged = undefined;
    this.expirePlansOf(sessionId, `transcript ${reason}`);
    this.log.warn({ sessionId, file, reason }, 'transcript rewritten: rebuilding the session model');
  }

  /** Forget a session (its archive and logs stay in SQLite): transcript gone, or finished. */
  removeSession(sessionId: string, why = 'transcript removed'): void {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    if (s.planTimer) clearTimeout(s.planTimer);
    this.sessions.delete(sessionId);
    this.byFile.delete(s.file);
    this.expirePlansOf(sessionId, why);
    this.log.info({ sessionId, file: s.file, why }, 'session closed');
  }

  /** Plan now, regardless of watermarks (session.compact). */
  async compactNow(sessionId: string, targetHeadroom: number | undefined, dryRun: boolean): Promise<Plan> {
    const s = this.require(sessionId);
    const work = this.makePlan(s, 'manual', targetHeadroom, dryRun);
    this.inFlight.add(work);
    try {
      const made = await work;
      if (!made) throw new ContextdError(ErrorCode.PLAN_EXPIRED, `session "${sessionId}" changed under the plan (transcript rewritten): ask again`, { sessionId });
      if (dryRun) return { ...made.plan, dryRun: true } as Plan;
      this.publish(s, made.plan, made.model);
      return made.plan;
    } finally {
      this.inFlight.delete(work);
    }
  }

  /** The agent's answer to a plan. Returns the session's headroom after it. */
  acknowledge(planId: string, applied: boolean, editIds: readonly string[] | undefined, reason: string | undefined): { headroom: number } {
    const open = this.openPlans.get(planId);
    if (!open) {
      const stored = this.deps.plans.get(planId);
      const why = stored ? `plan "${planId}" is ${stored.status}${stored.statusReason ? ` (${stored.statusReason})` : ''}` : `plan "${planId}" is unknown`;
      throw new ContextdError(ErrorCode.PLAN_EXPIRED, `${why}: wait for the next compaction.proposed or call session.compact`, { planId });
    }
    this.openPlans.delete(planId);
    const { session: s, plan } = open;
    if (!applied) {
      this.deps.plans.setStatus(planId, 'rejected', reason);
      this.log.info({ sessionId: s.sessionId, planId, reason }, 'plan rejected by the agent; re-planned only when the session changes');
      return { headroom: s.model.headroom().headroom };
    }
    const chosen = editIds ? plan.edits.filter((e) => editIds.includes(e.editId)) : plan.edits;
    const before = s.model.headroom();
    if (open.model !== s.model) {
      this.deps.plans.setStatus(planId, 'expired', 'the session model was rebuilt');
      throw new ContextdError(ErrorCode.PLAN_EXPIRED, `plan "${planId}" is expired (the session was rebuilt): wait for the next compaction.proposed`, { planId });
    }
    try {
      applyPlan(s.model, plan, chosen.map((e) => e.editId));
    } catch (err) {
      this.deps.plans.setStatus(planId, 'expired', describeError(err));
      throw err;
    }
    const after = s.model.headroom();
    const status = chosen.length === plan.edits.length ? 'applied' : 'partially-applied';
    this.deps.plans.setStatus(planId, status, reason);
    s.lastEdit = { reason: chosen.map((e) => e.reason).join(','), at: this.now(), planId };
    this.log.info(
      { sessionId: s.sessionId, planId, edits: chosen.length, headroomBefore: before.headroom, headroomAfter: after.headroom, tokensBefore: before.tokens, tokensAfter: after.tokens },
      'plan applied by the agent',
    );
    s.lastPlannedVersion = s.model.version;
    this.afterChange(s, 'edit');
    return { headroom: after.headroom };
  }

  /** Wait for in-flight plans, cancel timers (shutdown). */
  async drain(): Promise<void> {
    this.closing = true;
    for (const s of this.sessions.values()) if (s.planTimer) clearTimeout(s.planTimer);
    await Promise.allSettled([...this.all().map((s) => s.planning ?? Promise.resolve()), ...this.inFlight]);
  }

  private newModel(sessionId: string, budgetTokens = this.options.budgetTokens): SessionModel {
    return new SessionModel({
      sessionId,
      tokenCounter: this.deps.tokenCounter,
      reserveRatio: this.options.reserveRatio,
      ...(budgetTokens !== undefined ? { budgetTokens } : {}),
    });
  }

  /** Messages of a session as events, to rebuild its model under new options. */
  private replayable(s: LiveSession): TranscriptEvent[] {
    const meta = s.model.meta();
    const h = s.model.headroom();
    return [
      { type: 'meta', meta },
      ...s.model.messages().map((message) => ({ type: 'message' as const, message })),
      ...(h.reportedTokens !== undefined ? [{ type: 'usage' as const, contextTokens: h.reportedTokens }] : []),
    ];
  }

  private afterChange(s: LiveSession, forcedReason?: string): void {
    const h = s.model.headroom();
    const zone = zoneOf(h, this.options);
    const previous = s.lastLogged;
    const reason = forcedReason ?? headroomLogReason(previous, { headroom: h.headroom, zone });
    if (reason) {
      s.lastLogged = { headroom: h.headroom, zone };
      const sample = { sessionId: s.sessionId, at: this.now(), tokens: h.tokens, total: h.total, reserveRatio: h.reserveRatio, headroom: h.headroom, sections: h.sections, reportedTokens: h.reportedTokens, reason, file: s.file };
      this.log.info({ ...sample, zone }, 'headroom');
      try {
        this.deps.headroomLog.record(sample);
      } catch (err) {
        this.log.error({ sessionId: s.sessionId, err: describeError(err), code: (err as ContextdError).code }, 'headroom sample not stored; continuing');
      }
      if (previous?.zone !== zone) this.emit('zone', s, zone, previous?.zone);
    }
    this.scheduleFor(s, zone);
  }

  /** Past a watermark, plan in the mode its zone calls for. */
  private scheduleFor(s: LiveSession, zone: Zone): void {
    if (zone !== 'ok') this.schedulePlan(s, zone === 'reserve' ? 'reserve' : 'soft');
  }

  private schedulePlan(s: LiveSession, mode: PlanMode): void {
    if (this.closing || s.planning || s.planTimer) return;
    if (s.model.version === s.lastPlannedVersion) return;
    // Nobody can apply an advisory plan: make one now and then, not on every change.
    const advisory = this.deps.hasSubscribers ? !this.deps.hasSubscribers(s.sessionId) : false;
    const interval = advisory ? Math.max(this.options.minPlanIntervalMs, ADVISORY_PLAN_INTERVAL_MS) : this.options.minPlanIntervalMs;
    const wait = s.lastPlanAt + interval - this.now();
    if (wait > 0) {
      s.planTimer = setTimeout(() => {
        s.planTimer = undefined;
        this.scheduleFor(s, zoneOf(s.model.headroom(), this.options));
      }, wait);
      s.planTimer.unref();
      return;
    }
    s.planning = this.runPlan(s, mode).finally(() => {
      s.planning = undefined;
    });
  }

  private async runPlan(s: LiveSession, mode: PlanMode): Promise<void> {
    try {
      const made = await this.makePlan(s, mode, undefined, false);
      if (!made) return;
      const { plan, model } = made;
      if (plan.edits.length === 0) {
        this.log.info({ sessionId: s.sessionId, mode, headroom: plan.headroomBefore }, 'nothing to compact');
        return;
      }
      this.publish(s, plan, model);
    } catch (err) {
      this.log.error({ sessionId: s.sessionId, mode, err: describeError(err), code: (err as ContextdError).code }, 'planning failed; will retry when the session changes');
    }
  }

  /**
   * Plan from the session's current model. Resolves to undefined when the model was replaced
   * (transcript rewritten, budget reconfigured) while the summarizer worked: that plan is stale.
   */
  private async makePlan(s: LiveSession, mode: PlanMode, targetHeadroom: number | undefined, dryRun = false): Promise<{ plan: Plan; model: SessionModel } | undefined> {
    const model = s.model;
    if (!dryRun) {
      s.lastPlanAt = this.now();
      s.lastPlannedVersion = model.version;
    }
    const plan = await planCompaction(model, {
      mode,
      reserveRatio: this.options.reserveRatio,
      softWatermark: this.options.softWatermark,
      hysteresis: this.options.hysteresis,
      summarizer: this.deps.summarizer,
      tokenCounter: this.deps.tokenCounter,
      cache: s.summaryCache,
      now: this.now,
      ...(targetHeadroom !== undefined ? { targetHeadroom } : {}),
    });
    if (s.model !== model) {
      this.log.info({ sessionId: s.sessionId, planId: plan.planId }, 'plan dropped: the session was rebuilt while it was made');
      return undefined;
    }
    // Originals go to the archive before anyone can apply the plan: nothing is lost.
    if (plan.edits.length > 0 && !dryRun) {
      this.deps.archive.putMany(
        plan.edits.map((e) => {
          const messages = e.replaces.flatMap((id) => [...model.messagesOf(id)]);
          return { handle: e.handle, sessionId: s.sessionId, planId: plan.planId, editId: e.editId, reason: e.reason, sectionIds: e.replaces, messages, tokens: e.tokensBefore, createdAt: plan.createdAt };
        }),
      );
    }
    return { plan, model };
  }

  private publish(s: LiveSession, plan: Plan, model: SessionModel): void {
    this.expirePlansOf(s.sessionId, 'superseded by a newer plan');
    this.openPlans.set(plan.planId, { plan, session: s, model });
    this.deps.plans.record({ planId: plan.planId, sessionId: s.sessionId, createdAt: plan.createdAt, status: 'proposed', headroomBefore: plan.headroomBefore, headroomAfter: plan.headroomAfter, plan });
    this.log.info(
      {
        sessionId: s.sessionId,
        planId: plan.planId,
        mode: plan.mode,
        headroomBefore: plan.headroomBefore,
        headroomAfter: plan.headroomAfter,
        tokensBefore: plan.tokensBefore,
        tokensAfter: plan.tokensAfter,
        survival: plan.survival,
        edits: plan.edits.map((e) => ({ editId: e.editId, reason: e.reason, replaces: e.replaces, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter, handle: e.handle, scores: e.scores })),
      },
      'compaction planned',
    );
    this.emit('plan', s, plan);
  }

  private expirePlansOf(sessionId: string, why: string): void {
    for (const [id, open] of this.openPlans) {
      if (open.session.sessionId !== sessionId) continue;
      this.openPlans.delete(id);
      try {
        this.deps.plans.setStatus(id, 'expired', why);
      } catch (err) {
        this.log.error({ sessionId, planId: id, err: describeError(err) }, 'plan status not stored');
      }
    }
  }

  /** Plans proposed but not yet answered (for status). */
  openPlanCount(sessionId: string): number {
    let n = 0;
    for (const p of this.openPlans.values()) if (p.session.sessionId === sessionId) n++;
    return n;
  }
}
