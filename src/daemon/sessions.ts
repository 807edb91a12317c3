import { EventEmitter } from 'node:events';
import { statSync } from 'node:fs';
import type { TranscriptFormat } from '../ingest/types.js';
import type { Message, TranscriptEvent } from '../model/messages.js';
import { SessionModel } from '../model/index.js';
import type { TokenCountCache, TokenCounter } from '../model/tokens.js';
import type { DerivedDataCache } from '../model/index.js';
import { applyPlan, archiveEntries, originalsOf, planCompaction, planStanding, redactEntries, SummaryCache, type Plan, type PlanMode, type Summarizer } from '../compact/index.js';
import { readTranscriptPrefix, type ReadIdentity } from '../ingest/index.js';
import { IdleTracker, type LoadedSession } from '../harvest/index.js';
import type { Archive, HeadroomLog, ModelSteps, PlanLog } from '../store/index.js';
import { ContextdError, ErrorCode, describeError, isContextdError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { OriginalsFilter, ProviderFormatName } from '../proxy/index.js';
import { LiveSession, type ProxiedLink } from './live-session.js';
import type { DeclineState } from './declined-edits.js';
import { IngestQueue } from './ingest-queue.js';
import { LoopBudget, type BudgetWorker } from './loop-budget.js';
import { holdsReads, ReadGate } from './read-gate.js';
import { RebuildList, rebuildFits } from './rebuild-list.js';
import { StepWaits } from './step-waits.js';
import { checkSteps, keptStepSink, rebaseModel, ReplayLog, replayModel, resolveSteps, type ResolvedStep, type StepSink } from './replay-log.js';
import { ADVISORY_PLAN_INTERVAL_MS, fedSessionsOfGoneClients, fedSessionsToMakeRoom, idleSessionsToRelease, MEMORY_DEFAULTS, sessionsToRelease, zoneOf, type HeldSession, type MemoryBudget, type Zone } from './lifecycle.js';
import { sha1Hex } from '../util/sha1.js';

/** The tunables of the compaction loop (a slice of DaemonOptions). */
export interface LoopOptions {
  readonly budgetTokens: number | undefined;
  readonly reserveRatio: number;
  readonly softWatermark: number;
  readonly hysteresis: number;
  readonly minPlanIntervalMs: number;
  /** Least time between advisory plans (nobody subscribed) of one session (default 60 s). */
  readonly advisoryPlanIntervalMs?: number;
  /** A session idle this long is finished and harvested (default 30 min). */
  readonly idleTimeoutMs?: number;
  /** Budget of tokens held by tailed session models (default MEMORY_DEFAULTS). */
  readonly memory?: MemoryBudget;
  /** Longest transcript line parsed when a released session is rebuilt (default 8 MiB). */
  readonly maxLineBytes?: number;
  /**
   * Longest run of turns before the pump yields to the event loop (default TURN_SLICE_MS). At 0
   * every turn gets its own event-loop iteration (tests use it to assert order, not time).
   */
  readonly turnSliceMs?: number;
  /**
   * Most plans in flight at once, over all sessions (default PLAN_CONCURRENCY). A plan runs
   * beside the turns in slices of turnSliceMs; with an LLM summarizer most of its time is the
   * summarizer's answer, so several overlap.
   */
  readonly maxConcurrentPlans?: number;
}

export interface SessionManagerDeps {
  readonly logger: Logger;
  readonly tokenCounter: TokenCounter;
  /** Token counts of messages seen before (SQLite), so a restart does not re-tokenize. */
  readonly tokenCache?: TokenCountCache;
  /** Term stats and fingerprints of messages analysed before (SQLite), so a cold plan after a restart reads them. */
  readonly derivedCache?: DerivedDataCache;
  readonly summarizer: Summarizer;
  readonly headroomLog: HeadroomLog;
  readonly archive: Archive;
  readonly plans: PlanLog;
  /**
   * Where each tailed session's model steps (applied edits, rebuilds) are kept across restarts:
   * a session opened with kept steps gets them replayed (`keptSteps`). Undefined: not kept (a
   * restart builds models from their transcripts alone).
   */
  readonly modelSteps?: ModelSteps;
  readonly now?: () => number;
  /** Whether any client subscribed to a session (plans for others are advisory). */
  readonly hasSubscribers?: (sessionId: string) => boolean;
  /**
   * Turns an archived original into what is stored (secret redaction). Returns the messages to
   * store and what was redacted. Default: stored as read.
   */
  readonly archiveFilter?: ArchiveFilter;
  /** A session's model left memory (released or forgotten): the daemon may collect garbage. */
  readonly memoryFreed?: () => void;
  /**
   * What the tailer read of a transcript (Tailer.readIdentityOf): a released session is rebuilt
   * only from that same file (FILE_REPLACED otherwise, as harvest does), never from a file put in
   * its place or rewritten in place before the tailer noticed. Undefined: not checked.
   */
  readonly tailedFile?: (file: string) => ReadIdentity | undefined;
}

/**
 * Of a session's plans that ended unapplied (expired, rejected), the newest this many keep their
 * body in the plan log, and this many their status row (PlanLog.prune): a session planned from
 * every few seconds for days stored every plan it was ever proposed.
 */
export const KEEP_ENDED_PLAN_BODIES = 20;
export const KEEP_ENDED_PLAN_ROWS = 500;
/** A session's plans are pruned once every this many plans stored. */
const PRUNE_PLANS_EVERY = 20;

/** Rebuilds of sessions opened with kept model steps run this many at a time (`runKeptStepReplays`). */
export const KEPT_STEP_REBUILDS_AT_ONCE = 2;

/**
 * How often a session waiting for its kept steps' offset looks whether its lines stopped short
 * of it, and how long they may stop before it is rebuilt from what was read whatever the file's
 * size (`watchStalledReplay`).
 */
const REPLAY_STALL_MS = 5_000;
const REPLAY_GIVE_UP_MS = 60_000;

/** The size of `file` in bytes, or undefined when it cannot be read. */
function fileSize(file: string): number | undefined {
  try {
    return statSync(file).size;
  } catch {
    return undefined;
  }
}

/** Why a session is forgotten when its transcript is removed (`removeSession`'s default). */
const TRANSCRIPT_REMOVED = 'transcript removed';

/** Redacts the originals of an edit before they are archived (the same filter the proxy is handed). */
export type ArchiveFilter = OriginalsFilter;

export { ADVISORY_PLAN_INTERVAL_MS };

/**
 * Time of work per event-loop iteration (applying queued transcript batches, steps of plans),
 * shared out to the pump and every plan in flight (LoopBudget): then they yield, so socket
 * requests such as daemon.status are answered between slices.
 */
export const TURN_SLICE_MS = 4;
/** Most plans in flight at once, by default (LoopOptions.maxConcurrentPlans). */
export const PLAN_CONCURRENCY = 4;
/** Bytes of read-but-unapplied transcript above which the tailer waits before reading more. */
export const INGEST_HIGH_WATER_BYTES = 8 * 1024 * 1024;
/**
 * Transcript bytes per token, to count lines read but not applied against the memory budget
 * (`memory.maxSessionTokens` bounds models and their queued lines together).
 */
export const QUEUED_BYTES_PER_TOKEN = 4;

/** First and longest wait before a rebuild is tried again after the plan log could not be read. */
const REBUILD_RETRY_MS = 1000;
const REBUILD_RETRY_MAX_MS = 60_000;

export interface SessionManagerEvents {
  /** A plan was made and stored; the daemon pushes it to subscribers, or marks it advisory. */
  plan: [session: LiveSession, plan: Plan];
  /** Headroom crossed a watermark. */
  zone: [session: LiveSession, zone: Zone, previous: Zone | undefined];
  /**
   * A session fed over the socket was released from memory: its agent's messages as last
   * synced, the only copy (no transcript to read them back from), for the daemon to harvest
   * before they are gone — its agent may never sync it again (it exits without session.end).
   */
  fedReleased: [session: LiveSession, history: LoadedSession];
}

/**
 * The registry of live sessions. Each session's lifecycle decisions (log, zone, throttle,
 * open plans, ended) are made by its `SessionLifecycle`; this class carries them out: it
 * applies transcript events to the model, stores headroom samples, runs plans, archives
 * originals and emits plans for the daemon to push.
 *
 * Scheduling: transcript batches (`enqueue`) and plans wait in one round-robin run queue of
 * sessions. A session's turn applies every batch it has waiting (coalesced: one re-plan for
 * many appends), then starts its plan if one is due; a backlog longer than a slice puts the
 * plan off by one turn at most, so plans go on under sustained load. The pump runs turns for at most
 * TURN_SLICE_MS and then yields to the event loop, so socket requests interleave with the
 * work, and a busy session goes to the back of the queue instead of delaying the others.
 *
 * A turn never waits for its plan: the plan runs beside the pump, itself yielding to the event
 * loop between steps once its share of the iteration's TURN_SLICE_MS is spent (the planner's
 * `pause`; one LoopBudget shares the slice out to the pump and all plans), so lines of every session
 * (its own included) go on being applied while a summarizer works. A session has one plan in
 * flight at most (lines that arrive meanwhile make one more plan after it: coalesced), and at
 * most maxConcurrentPlans are in flight over all sessions; the others wait in arrival order.
 */
/** A plan and the model it was made from (its generation and epoch then): what `standing` checks it against. */
interface Planned {
  readonly plan: Plan;
  readonly model: SessionModel;
  readonly generation: number;
  readonly epoch: number;
  /** The plan's texts as the plan log stores them (secrets redacted), by text (`storedTexts`). */
  readonly stored?: ReadonlyMap<string, string>;
}

export class SessionManager extends EventEmitter<SessionManagerEvents> {
  private readonly sessions = new Map<string, LiveSession>();
  private readonly byFile = new Map<string, LiveSession>();
  /** Sessions waiting for their turn (batches to apply, or a plan to make), in order. */
  private readonly runQueue = new Set<LiveSession>();
  /** Sessions whose turn makes a plan. */
  private readonly planQueue = new Set<LiveSession>();
  /** Sessions whose plan was put off once for their backlog (the next turn plans whatever is left). */
  private readonly deferredPlans = new Set<LiveSession>();
  /** Transcript batches read but not applied yet. */
  private readonly queued = new IngestQueue<LiveSession>();
  private pumping: Promise<void> | undefined;
  /** Plans being made (awaited on shutdown). */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Plans the proxy applied, being stored (`recordProxied`): `drain` waits for them. */
  private readonly storing = new Set<Promise<void>>();
  /** Plans of the run queue in flight (at most maxConcurrentPlans). */
  private plansRunning = 0;
  /** Sessions whose due plan waits for a free plan slot, in arrival order (they stay in planQueue). */
  private readonly planWaiting = new Set<LiveSession>();
  /** The time slice of each event-loop iteration, shared out to the pump and the plans in flight. */
  private readonly budget = new LoopBudget(() => this.turnSliceMs);
  /** Aborted on shutdown: plans in flight stop at their next step, a summarizer call is cut short. */
  private readonly stopping = new AbortController();
  private readonly idle: IdleTracker;
  private readonly log: Logger;
  private readonly now: () => number;
  private options: LoopOptions;
  private closing = false;
  /** After the first scan: a session's reads are held while its lines wait or its overdue plan is made (`room`). */
  private steady = false;
  /** Readers of a session held at the gate, woken when what held them clears. */
  private readonly gate = new ReadGate<LiveSession>();
  /** Sessions released with lines read but not applied: their turn rebuilds them once the budget has room (`rebuildDropped`). */
  private readonly rebuildDue = new RebuildList<LiveSession>();
  /** Transcripts whose batch could not be handed over before their session was opened (`handOffFailed`): where it ended. */
  private readonly unopened = new Map<string, { readonly toOffset: number; readonly err: unknown }>();
  /** Sessions whose check before a release could not read the plan log (said once until it can). */
  private readonly checkUnreadable = new WeakSet<LiveSession>();
  /** Rebuilds of sessions opened with kept model steps under way (`replayedAtStart`), and those waiting for a slot. */
  private readonly startReplays = new Set<Promise<void>>();
  private readonly replayQueue = new Set<LiveSession>();
  /** Reads held back by backpressure so far (`room`): a session waiting for its kept steps is not stalled meanwhile. */
  private readsHeldBack = 0;
  /** Sessions waiting for their kept steps' offset (`replayFrom`): what a request for the model waits on. */
  private readonly replayWaits = new StepWaits<LiveSession>();

  constructor(options: LoopOptions, private readonly deps: SessionManagerDeps) {
    super();
    this.options = options;
    this.log = deps.logger.child({ component: 'sessions' });
    this.now = deps.now ?? Date.now;
    this.idle = new IdleTracker(options.idleTimeoutMs !== undefined ? { idleMs: options.idleTimeoutMs } : {});
  }

  /**
   * Replace the loop's tunables (SIGHUP). Models are rebuilt only when the budget or reserve
   * changed; a rebuild renumbers sections, so the open plans of that session expire.
   */
  reconfigure(options: LoopOptions): void {
    const rebuild = options.budgetTokens !== this.options.budgetTokens || options.reserveRatio !== this.options.reserveRatio;
    this.options = options;
    for (const s of this.sessions.values()) {
      if (s.source === 'proxy' || s.released) continue; // the proxy owns that model; a released one is rebuilt under the new options
      if (rebuild) {
        s.model = rebaseModel(s.model, this.newModel(s.sessionId, s.fed ? s.fed.budgetTokens : options.budgetTokens));
        if (s.fed) s.fed = { ...s.fed, version: -1 };
        // A release replays it at the same place (none applied yet: the model was empty, rebased at 0).
        else s.replay.rebased(s.tailOffset ?? (s.model.messages().length === 0 ? 0 : undefined));
        this.expire(s.sessionId, s.life.rebuilt(), 'budget reconfigured');
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

  /**
   * Events read from a transcript (up to file offset `toOffset`): apply them and react to the
   * new headroom. A session released from memory is rebuilt first (the events wait for it).
   */
  ingest(file: string, sessionId: string, format: TranscriptFormat, events: readonly TranscriptEvent[], toOffset?: number): LiveSession {
    const s = this.open(file, sessionId, format);
    if (s.fed) return s;
    this.ingestInto(s, events, toOffset);
    return s;
  }

  /**
   * Like `ingest`, but the events wait for the session's turn in the run queue (the daemon's
   * tailer path): the session exists at once, its model catches up within a few turns.
   * `bytes` is what the batch was decoded from (backpressure: see `room`).
   */
  enqueue(file: string, sessionId: string, format: TranscriptFormat, events: readonly TranscriptEvent[], toOffset: number | undefined, bytes: number): LiveSession {
    const s = this.open(file, sessionId, format);
    if (s.fed || this.closing) return s;
    const lost = this.unopened.get(file);
    if (lost) {
      this.unopened.delete(file);
      this.applyFailed(s, lost.err, s.tailOffset, lost.toOffset);
    }
    this.queued.push(s, { events, toOffset, bytes });
    if (toOffset !== undefined) s.queuedOffset = toOffset;
    // Lines just read are activity: the idle sweep and the memory budget (oldest first) must not
    // take this session for a quiet one while its lines wait for their turn.
    s.life.touched(this.now(), false);
    this.schedule(s);
    return s;
  }

  /**
   * The tailer asks before reading more (of `file`): resolves when it may (undefined when it may
   * at once). Always: once the transcript bytes waiting to be applied, over all sessions, fall to
   * INGEST_HIGH_WATER_BYTES. After the first scan (`steadyState`) also, for `file`'s session:
   * once its lines read before were applied (so a session has one read waiting at most, and what
   * was appended meanwhile is read in one go), its model is rebuilt if it was released, and —
   * when its model is over its budget — its due plan was made (a session whose plan is overdue
   * reads no further: its model stays near its budget instead of growing while plans are behind,
   * and plans of smaller models are faster). Lines held back stay in the transcript, past the
   * tailer's offset: nothing is lost.
   */
  room(file?: string): Promise<void> | undefined {
    const s = file !== undefined ? this.byFile.get(file) : undefined;
    if (s && this.holdsReads(s)) return this.gate.wait(s).then(() => this.room(file));
    const held = this.queued.below(INGEST_HIGH_WATER_BYTES);
    if (held) this.readsHeldBack++;
    return held;
  }

  /** The first scan is over: hold each session's reads as `room` says. */
  steadyState(): void {
    this.steady = true;
    // Transcripts whose lines ended before their last kept step's offset (rewritten shorter in
    // place as they were opened): rebuilt from what was read; the rebuild finds the steps past it
    // and drops them. (A shutdown during the first scan stopped every wait first, `stopIngest`:
    // the lines it dropped do not make a transcript short, and the steps stay kept.)
    for (const s of this.sessions.values()) if (s.replayFrom !== undefined) this.replayKeptSteps(s, s.pending.at(-1)?.toOffset ?? 0);
  }

  /** Resolves once the sessions opened with kept model steps so far are rebuilt (or failed to be: logged). */
  async replayedAtStart(): Promise<void> {
    while (this.startReplays.size > 0) await Promise.all(this.startReplays);
  }

  /** Where `sessionId`'s model steps are kept across restarts (`deps.modelSteps`), or undefined. */
  private stepSink(sessionId: string): StepSink | undefined {
    return this.deps.modelSteps ? keptStepSink(this.deps.modelSteps, sessionId, this.log) : undefined;
  }

  /**
   * A session just opened (by the first scan after a restart, or later: a transcript that was
   * not live at the start, a finished session resumed): steps kept for it (edits the agent
   * applied) are replayed. It waits released, its lines pending, until they reach the last
   * step's offset, then is rebuilt as a released session is. With steps that cannot be replayed
   * — marked so, or a transcript shorter now than where the last step was taken — its model is
   * its transcript alone and the kept steps are dropped.
   */
  private keptSteps(s: LiveSession): void {
    const store = this.deps.modelSteps;
    // (opened by a read that went on as the daemon stops: its steps stay kept, nothing waits)
    if (!store || this.closing) return;
    let kept;
    try {
      kept = store.load(s.sessionId);
    } catch (err) {
      this.log.error({ sessionId: s.sessionId, err: describeError(err) }, 'kept model steps cannot be read: the session is built from its transcript alone, without the edits the agent applied');
      return;
    }
    if (kept === undefined) return;
    const last = 'steps' in kept ? kept.steps.at(-1) : undefined;
    let why = 'unreplayable' in kept ? kept.unreplayable : undefined;
    if (why === undefined && last) {
      const size = fileSize(s.file);
      if (size === undefined || size < last.offset) why = `the transcript (${size ?? 'unreadable'} bytes) ends before the offset of its last step (${last.offset})`;
    }
    if (why !== undefined || !last) {
      if (why !== undefined) this.log.warn({ sessionId: s.sessionId, why }, 'kept model steps dropped: the session is built from its transcript alone, without the edits the agent applied');
      s.replay.clear();
      return;
    }
    s.replay = new ReplayLog(this.stepSink(s.sessionId), 'steps' in kept ? kept.steps : []);
    s.replayFrom = last.offset;
    this.replayWaits.start(s, this.steady ? this.watchStalledReplay(s) : undefined);
    s.released = { offset: 0, headroom: undefined, modelOffset: 0, fromKeptSteps: true };
  }

  /**
   * Once the daemon runs, a session waiting for its kept steps' offset (`keptSteps`) whose lines
   * stop short of it is rebuilt from what was read; the rebuild finds the steps past it and drops
   * them. Stopped short means: no line read or queued since the last look (every
   * REPLAY_STALL_MS), and either the transcript is now shorter than that offset (rewritten in
   * place as it opened) or that has lasted REPLAY_GIVE_UP_MS (a last line never ended). Lines
   * merely held back keep the file's size, and a look after a read was held back by
   * backpressure (the lines waiting over all sessions past the high-water mark) does not count.
   * (During the first scan `steadyState` does this.)
   */
  private watchStalledReplay(s: LiveSession): NodeJS.Timeout {
    let seen = -1;
    let still = 0;
    let heldBack = this.readsHeldBack;
    const timer = setInterval(() => {
      if (s.replayFrom === undefined) return void clearInterval(timer);
      const at = s.pending.at(-1)?.toOffset ?? 0;
      // (a read held back since the last look, lines waiting over the high-water mark: not a stall)
      const moved = at !== seen || this.queued.has(s) || this.readsHeldBack !== heldBack || this.queued.bytes > INGEST_HIGH_WATER_BYTES;
      seen = at;
      heldBack = this.readsHeldBack;
      still = moved ? 0 : still + 1;
      if (still === 0) return;
      const size = fileSize(s.file);
      if (size === undefined || size < s.replayFrom || still * REPLAY_STALL_MS >= REPLAY_GIVE_UP_MS) this.replayKeptSteps(s, at);
    }, REPLAY_STALL_MS);
    timer.unref();
    return timer;
  }

  /** `s` no longer waits for its kept steps' offset: requests waiting for its model go on. */
  private stopWaitingForSteps(s: LiveSession): void {
    s.replayFrom = undefined;
    this.replayWaits.stop(s);
  }

  /** Rebuild `s` from its transcript read to `offset` with its kept steps (`keptSteps`). */
  private replayKeptSteps(s: LiveSession, offset: number): void {
    this.stopWaitingForSteps(s);
    if (offset === 0) {
      // nothing was read (the transcript was emptied): nothing to replay the steps on
      this.log.warn({ sessionId: s.sessionId }, 'kept model steps dropped: the transcript holds no line now');
      s.replay.clear();
      s.pending.length = 0;
      s.released = undefined;
      return;
    }
    // every line pending was read up to `offset`: the rebuild reads them from the transcript
    s.pending.length = 0;
    s.released = { offset, headroom: undefined, modelOffset: offset, fromKeptSteps: true };
    this.replayQueue.add(s);
    this.runKeptStepReplays();
  }

  /**
   * Start the rebuilds of sessions opened with kept steps, KEPT_STEP_REBUILDS_AT_ONCE at most: each
   * reads its transcript and builds its model at once (a restart with many edited sessions would
   * otherwise hold them all in memory together). A request or an append that needs one sooner
   * rebuilds it at once (`restore`).
   */
  private runKeptStepReplays(): void {
    while (this.startReplays.size < KEPT_STEP_REBUILDS_AT_ONCE && this.replayQueue.size > 0) {
      const s = this.replayQueue.values().next().value as LiveSession;
      this.replayQueue.delete(s);
      const done: Promise<void> = this.restore(s)
        .then(
          () => undefined,
          (err: unknown) => this.notRebuilt(s, err),
        )
        .finally(() => {
          this.startReplays.delete(done);
          if (!this.closing) this.runKeptStepReplays();
        });
      this.startReplays.add(done);
    }
  }

  /** Whether reads of `s`'s transcript wait (see `room`). */
  private holdsReads(s: LiveSession): boolean {
    return holdsReads({
      steady: this.steady,
      closing: this.closing,
      current: this.current(s),
      fed: s.fed !== undefined,
      queued: this.queued.has(s),
      restoring: s.restoring !== undefined,
      planDue: this.planQueue.has(s) || s.life.planning,
      released: s.released !== undefined,
      headroom: () => s.model.headroom().headroom,
    });
  }

  /** What held `s`'s reads may have cleared: its readers look again. */
  private wakeReaders(s: LiveSession): void {
    this.gate.wake(s);
  }

  /** Resolves once every queued transcript batch has been applied (the daemon's first scan). */
  async settled(): Promise<void> {
    await this.queued.below(0);
  }

  /** The session of a transcript, opened when new; a session fed over the socket is returned as it is. */
  private open(file: string, sessionId: string, format: TranscriptFormat): LiveSession {
    let s = this.sessions.get(sessionId);
    if (s?.fed) {
      // The agent feeds this session itself (session.sync): what it sends is what the model
      // sees, so a transcript of the same id is not mixed in.
      this.log.debug({ sessionId, file }, 'transcript lines ignored: the session is fed over the socket');
      return s;
    }
    if (!s) {
      s = new LiveSession(sessionId, file, format, this.newModel(sessionId), this.now(), 'transcript', this.stepSink(sessionId));
      this.sessions.set(sessionId, s);
      this.byFile.set(file, s);
      this.log.info({ sessionId, file, format }, 'session opened');
      this.prunePlans(s); // what earlier runs left (a run of fewer than PRUNE_PLANS_EVERY plans prunes nothing itself)
      this.keptSteps(s);
      for (const p of this.sessions.values()) if (p.proxied?.agentSessionId === sessionId) this.link(p);
    }
    return s;
  }

  private ingestInto(s: LiveSession, events: readonly TranscriptEvent[], toOffset: number | undefined): void {
    if (s.released) {
      // Waiting for kept steps: the rebuild reads these lines from the transcript again (only
      // where they end is needed; holding them decoded costs ~1 B per transcript byte).
      s.pending.push({ events: s.replayFrom !== undefined && toOffset !== undefined ? [] : events, toOffset });
      if (s.replayFrom !== undefined) {
        // Kept steps to replay: rebuilt once the lines read reach the last step's offset.
        if (toOffset !== undefined && toOffset >= s.replayFrom) this.replayKeptSteps(s, toOffset);
        return;
      }
      if (this.replayQueue.has(s)) return; // its rebuild comes in its turn (runKeptStepReplays), these lines after it
      this.restore(s).then(undefined, (err: unknown) => this.notRebuilt(s, err));
      return;
    }
    this.apply(s, events, toOffset);
    this.enforceBudget(s);
  }

  /**
   * Apply a session's queued batches, oldest first, until none is left or `more()` says the
   * slice is spent (at least one is applied). Returns true when none is left.
   */
  private applyQueued(s: LiveSession, more: () => boolean = () => true): boolean {
    for (let b = this.queued.shift(s); b; b = this.queued.shift(s)) {
      if (s.fed || !this.current(s)) {
        this.queued.drop(s);
        this.wakeReaders(s);
        return true;
      }
      const appliedTo = s.tailOffset;
      try {
        this.ingestInto(s, b.events, b.toOffset);
      } catch (err) {
        // (the batches still queued are read again from the transcript by the rebuild)
        this.applyFailed(s, err, appliedTo, b.toOffset);
        break;
      }
      if (!more()) break;
    }
    if (this.queued.has(s)) return false;
    this.wakeReaders(s);
    return true;
  }

  /**
   * The tailer's batch of `file`, read up to `toOffset`, could not be queued (`enqueue` threw)
   * and the tailer has read past it: the session's model is rebuilt from its transcript up to
   * there (`applyFailed`), now, or when the session is opened by the file's next lines if it
   * could not be opened now.
   */
  handOffFailed(file: string, sessionId: string, toOffset: number, err: unknown): void {
    const s = this.sessions.get(sessionId);
    if (this.closing || s?.fed) return;
    if (s?.file === file) return this.applyFailed(s, err, s.tailOffset, toOffset);
    this.unopened.set(file, { toOffset, err });
    this.log.error({ sessionId, file, code: ErrorCode.INGEST_FAILED, err: describeError(err), offset: toOffset }, 'transcript lines read but not taken (the session could not be opened): its model is built from the transcript when its next lines are read');
  }

  /**
   * Lines of `s` read up to `toOffset` are not in its model: applying them threw (the tokenizer
   * could not load, say; the model may hold part of them), or they could not be queued
   * (`handOffFailed`). The model, good up to `appliedTo`, is dropped and rebuilt from the
   * transcript up to `toOffset` as a released one is (the edits the agent applied replayed), so
   * it matches the file. Until a rebuild succeeds the session stays released with its `failure`
   * (daemon.status), and the rebuild is tried again on its next append or request, and at the idle
   * sweep; other sessions go on.
   */
  private applyFailed(s: LiveSession, err: unknown, appliedTo: number | undefined, toOffset: number | undefined): void {
    const why = describeError(err);
    s.failure = { code: ErrorCode.INGEST_FAILED, message: `transcript lines could not be applied to the session model (${why}): it is rebuilt from the transcript`, since: this.now() };
    this.log.error({ sessionId: s.sessionId, file: s.file, code: ErrorCode.INGEST_FAILED, err: why, offset: toOffset ?? null }, 'transcript lines could not be applied: the session model is rebuilt from its transcript');
    const r = s.released;
    if (r && s.replayFrom !== undefined) {
      // Waiting for its kept steps: its rebuild reads the transcript up to the lines read anyway.
      this.ingestInto(s, [], toOffset);
      return;
    }
    const readTo = Math.max(toOffset ?? 0, s.queuedOffset ?? 0, s.pending.at(-1)?.toOffset ?? 0, r?.offset ?? s.tailOffset ?? 0);
    if (r) {
      // (a rebuild under way sees the new offset and leaves it to the one scheduled below)
      s.released = { ...r, offset: readTo };
      s.pending.length = 0;
      this.queued.drop(s); // (lines the rebuild now reads: applied after it, they would be there twice)
    } else {
      this.dropScheduled(s);
      this.expire(s.sessionId, s.life.rebuilt(), 'transcript lines could not be applied: the session model is rebuilt');
      s.life.released(s.model.version, true);
      s.released = { offset: readTo, headroom: undefined, modelOffset: Math.min(appliedTo ?? 0, readTo) };
      this.dropModel(s);
    }
    this.wakeReaders(s);
    this.rebuildDue.add(s, 0);
    this.schedule(s);
  }

  /**
   * Drop `s`'s model and what holds on to it (its summary cache; the declined-edits record, bound
   * to the model it was last asked about): an empty model stands in until a rebuild.
   */
  private dropModel(s: LiveSession, budgetTokens?: number): void {
    s.model = this.newModel(s.sessionId, budgetTokens);
    s.summaryCache = new SummaryCache();
    s.declined.detach();
    this.deps.memoryFreed?.();
  }

  /** Forget the plans `s` has scheduled or waiting for a slot, and the lines queued for it. */
  private dropScheduled(s: LiveSession): void {
    if (s.planTimer) clearTimeout(s.planTimer);
    s.planTimer = undefined;
    this.planQueue.delete(s);
    this.deferredPlans.delete(s);
    this.planWaiting.delete(s);
    this.queued.drop(s);
  }

  private apply(s: LiveSession, events: readonly TranscriptEvent[], toOffset: number | undefined): void {
    const sessionId = s.sessionId;
    s.tailOffset = toOffset;
    s.model.applyAll(events);
    const now = this.now();
    const grew = events.some((e) => e.type === 'message');
    s.life.touched(now, grew);
    if (events.some((e) => e.type !== 'unknown')) {
      if (events.at(-1)?.type === 'turn-end') this.idle.turnEnded(sessionId, now);
      else this.idle.touch(sessionId, now);
    }
    // The agent compacted or rewound its own context: sections the open plans name are gone.
    if (events.some((e) => e.type === 'reset' || e.type === 'truncate')) this.expire(sessionId, s.life.expireAll(), 'the agent rewrote its context');
    this.afterChange(s);
  }

  /** What the manager holds and has yet to do (daemon.status `load`). */
  backlog(): { queuedBytes: number; queuedSessions: number; sessionsInMemory: number; fedSessionsInMemory: number; plansInFlight: number } {
    let inMemory = 0;
    let fed = 0;
    for (const s of this.sessions.values()) {
      if (s.source !== 'transcript' || s.released) continue;
      inMemory++;
      if (s.fed !== undefined) fed++;
    }
    return { queuedBytes: this.queued.bytes, queuedSessions: this.queued.size, sessionsInMemory: inMemory, fedSessionsInMemory: fed, plansInFlight: this.inFlight.size };
  }

  /** Tokens held by the in-memory models of tailed sessions and of those fed over the socket (what the memory budget bounds). */
  heldTokens(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.source === 'transcript' && !s.released) n += s.model.tokens();
    return n;
  }

  /**
   * Over the memory budget: release the least recently active sessions (decided by
   * `sessionsToRelease`) but never `keep`, the one just appended to.
   */
  private enforceBudget(keep: LiveSession): void {
    const budget = this.options.memory ?? MEMORY_DEFAULTS;
    // Runs on every append: the cheap sum first; candidates (and their subscriber lookups) only when over.
    if (budget.maxSessionTokens <= 0 || this.heldTokens() + this.queuedTokens() <= budget.maxSessionTokens) return;
    // A session that cannot be released now (`release`: unreplayable, or the plan log cannot be read) no longer counts as releasable: choose again.
    const refused = new Set<LiveSession>();
    for (let again = true; again; ) {
      again = false;
      for (const id of sessionsToRelease(this.held(keep, refused), budget, this.now())) {
        const s = this.sessions.get(id);
        if (s && !this.release(s, 'memory budget')) {
          refused.add(s);
          again = true;
        }
      }
    }
  }

  /**
   * Release the sessions idle for `memory.idleReleaseMs` (the daemon asks periodically), so an
   * idle daemon holds no session models whatever the budget. Returns how many were released.
   */
  releaseIdle(): number {
    const budget = this.options.memory ?? MEMORY_DEFAULTS;
    if (this.closing) return 0;
    let released = 0;
    for (const id of idleSessionsToRelease(this.held(undefined), budget, this.now())) {
      const s = this.sessions.get(id);
      if (s && this.release(s, 'idle')) released++;
    }
    // Fed sessions whose clients are all gone go after `releaseAfterMs`, whatever idleReleaseMs says.
    for (const id of fedSessionsOfGoneClients(this.held(undefined), budget, this.now())) {
      const s = this.sessions.get(id);
      if (s && this.release(s, 'client gone')) released++;
    }
    // The sweep is also when sessions waiting to be rebuilt look again at the budget.
    for (const d of this.rebuildDue.keys()) this.schedule(d);
    return released;
  }

  /**
   * Tokens of lines read but not applied (of `s`, or of all sessions) as the memory budget counts
   * them. None during the first scan: a session with lines queued cannot be released then, so
   * counting them would only release the sessions already scanned, to rebuild them soon after
   * (the queue is bounded by INGEST_HIGH_WATER_BYTES).
   */
  private queuedTokens(s?: LiveSession): number {
    if (!this.steady) return 0;
    return (s ? this.queued.bytesOf(s) : this.queued.bytes) / QUEUED_BYTES_PER_TOKEN;
  }

  /** The in-memory tailed sessions as the memory budget sees them (`refused`: not releasable now). */
  private held(keep: LiveSession | undefined, refused?: ReadonlySet<LiveSession>): HeldSession[] {
    return [...this.sessions.values()]
      .filter((s) => s.source === 'transcript' && !s.released)
      .map((s) => ({
        sessionId: s.sessionId,
        // lines read and not applied count too: a release drops them (the rebuild reads them again)
        tokens: s.model.tokens() + this.queuedTokens(s),
        lastActivityAt: s.lastActivityAt,
        // (during the first scan a session's queue may hold all of it: released then, status would show it empty)
        releasable: s !== keep && refused?.has(s) !== true && (s.fed !== undefined ? this.fedReleasable(s) : (s.queuedOffset ?? s.tailOffset) !== undefined && s.life.releasable && s.replay.unreplayable === undefined && !this.planQueue.has(s) && s.restoring === undefined && (this.steady || !this.queued.has(s))),
        subscribed: this.subscribedTo(s),
        fed: s.fed !== undefined,
      }));
  }

  /**
   * Whether a fed session's model may be released as far as its plans go: none being made or due,
   * and none pushed and awaiting an answer — unless no client is connected to give it (the plan
   * expires; an ack arriving later is told so, and the agent's next list carries what it applied).
   */
  private fedReleasable(s: LiveSession): boolean {
    return !s.life.planning && !this.planQueue.has(s) && (s.life.releasable || !this.subscribedTo(s));
  }

  /**
   * Drop a session's model, caches and the lines read for it but not applied yet; it keeps its
   * id, lifecycle and the offset read up to (the rebuild reads the dropped lines from the
   * transcript again, and the tailer reads on from where it was: nothing is lost). False when it
   * must stay (`canReplay`). A session fed over the socket is released by `releaseFed`.
   */
  private release(s: LiveSession, why: 'memory budget' | 'idle' | 'client gone' | 'fed session limit'): boolean {
    if (s.fed !== undefined) return this.releaseFed(s, why);
    if (!this.canReplay(s)) return false;
    // Nobody was handed them: a subscriber arriving later gets a fresh plan of the rebuilt model.
    this.expire(s.sessionId, s.life.releasing(), 'advisory plan: the session was released from memory');
    const headroom = s.model.headroom();
    if (s.planTimer) clearTimeout(s.planTimer);
    s.planTimer = undefined;
    const droppedTokens = this.queued.bytesOf(s) / QUEUED_BYTES_PER_TOKEN;
    const dropped = this.queued.drop(s);
    s.life.released(s.model.version, dropped > 0);
    s.released = { offset: s.queuedOffset ?? s.tailOffset ?? 0, headroom, modelOffset: s.tailOffset ?? 0 };
    this.dropModel(s);
    this.log.info({ sessionId: s.sessionId, tokens: headroom.tokens, offset: s.released.offset, droppedBatches: dropped, why }, `session released from memory (${why}); rebuilt from its transcript when needed`);
    this.wakeReaders(s);
    // Memory was freed: sessions waiting to be rebuilt may fit now (this one too, when released idle).
    if (dropped > 0) this.rebuildDue.add(s, headroom.tokens + droppedTokens);
    for (const d of this.rebuildDue.keys()) this.schedule(d);
    return true;
  }

  /**
   * Whether the plan log can replay what `s`'s model holds besides its transcript (its applied
   * edits: `checkSteps`). When it cannot, the session is marked for good and stays in memory: a
   * rebuild would lose edits the agent applied. When the plan log cannot be read now, it stays
   * for now only (checked again at the next release).
   */
  private canReplay(s: LiveSession): boolean {
    if (s.replay.steps.length > 0 && s.replay.unreplayable === undefined) {
      let why: string | undefined;
      try {
        why = checkSteps(s.replay.steps, this.deps.plans);
      } catch (err) {
        // The plan log cannot be read now (SQLITE_BUSY, an I/O error): nothing is known of its rows, so the session stays for now only.
        if (!this.checkUnreadable.has(s)) this.log.warn({ sessionId: s.sessionId, err: describeError(err) }, 'session not released now: the plan log cannot be read to check its applied edits; tried again at the next release');
        this.checkUnreadable.add(s);
        return false;
      }
      this.checkUnreadable.delete(s);
      if (why !== undefined) {
        s.replay.markUnreplayable(why);
        this.log.error({ sessionId: s.sessionId, why }, 'session kept in memory for good: its applied edits cannot be replayed from the plan log, and a rebuild from its transcript would lose them');
      }
    }
    return s.replay.unreplayable === undefined;
  }

  /**
   * The turn of a session released with lines it had read: rebuilt (from its transcript, with
   * those lines) when the models held and its own fit the memory budget; else it waits for the
   * next release or idle sweep to look again.
   */
  private rebuildDropped(s: LiveSession): void {
    const tokens = this.rebuildDue.tokensOf(s);
    if (tokens === undefined) return;
    if (!s.released || !this.current(s) || s.fed) {
      this.rebuildDue.delete(s);
      return;
    }
    const budget = this.options.memory ?? MEMORY_DEFAULTS;
    if (!rebuildFits(tokens, this.heldTokens() + this.queuedTokens(), budget.maxSessionTokens)) return;
    this.rebuildDue.delete(s);
    this.restore(s).then(undefined, (err: unknown) => this.notRebuilt(s, err));
  }

  /**
   * The session with its model in memory: a released one is rebuilt from its transcript up to
   * the offset it had (token counts come from the cache), then the appends that waited apply.
   */
  async restore(s: LiveSession): Promise<LiveSession> {
    // Fed over the socket: no transcript to rebuild from, only the agent's next list.
    this.assertFedInMemory(s);
    // Opened with kept steps: its rebuild starts once the lines read reach them.
    const wait = this.replayWaits.until(s);
    if (wait) await wait;
    if (s.released) {
      s.restoring ??= this.rebuild(s).finally(() => {
        s.restoring = undefined;
        this.wakeReaders(s);
      });
      await s.restoring.catch((err: unknown) => {
        throw this.failedError(s, err);
      });
    }
    // Whoever reads the model sees every line read so far, not only those whose turn came:
    // applied here ahead of its turn, in slices with a yield between (a long backlog never
    // blocks the event loop at once).
    const w = this.budget.worker();
    try {
      while (this.queued.has(s) && this.sessions.get(s.sessionId) === s && !s.fed) {
        if (this.applyQueued(s, () => w.left())) break;
        await w.pause();
      }
    } finally {
      w.done();
    }
    // Lines just taken could not be applied (`applyFailed`): its rebuild is scheduled, and what it holds now is not its transcript.
    if (s.released && s.failure) throw this.failedError(s, undefined);
    return s;
  }

  /** What a request for the model of a session whose lines could not be applied gets: a coded error, not a stack. */
  private failedError(s: LiveSession, err: unknown): unknown {
    if (!s.failure || err instanceof ContextdError) return err;
    return new ContextdError(ErrorCode.INGEST_FAILED, `session "${s.sessionId}" is not available now: ${s.failure.message}; it is retried on its next append or request — try again`, { sessionId: s.sessionId }, err !== undefined ? { cause: err } : undefined);
  }

  /** The session with this id, rebuilt first if it was released (requests that read its model). */
  async requireLoaded(sessionId: string): Promise<LiveSession> {
    return this.restore(this.require(sessionId));
  }

  private async rebuild(s: LiveSession): Promise<void> {
    const r = s.released;
    if (!r) return;
    // What the model held besides its transcript (applied edits), read from the plan log first.
    let steps: ResolvedStep[] | string = [];
    if (s.replay.steps.length > 0) {
      try {
        steps = resolveSteps(s.replay.steps, this.deps.plans);
      } catch (err) {
        // The plan log cannot be read now (SQLITE_BUSY, an I/O error), which says nothing about its
        // rows: the session stays released with its steps, and the rebuild is tried again later.
        throw this.planLogUnreadable(s, err);
      }
    }
    // A step past the lines the rebuild reads: the transcript's lines stopped short of it (a
    // session opened with kept steps: `steadyState`, `watchStalledReplay`).
    if (typeof steps !== 'string' && steps.some((st) => st.offset > r.modelOffset)) steps = `the transcript ends before the offset of a step (${String(steps.at(-1)?.offset)} > ${r.modelOffset})`;
    const replayed = typeof steps === 'string' ? [] : steps;
    // A file replaced before the tailer's reset: FILE_REPLACED (the reset rebuilds it from 0), not the new file's lines as the old session.
    const splitAt = [...replayed.map((st) => st.offset), r.modelOffset];
    const read = await readTranscriptPrefix(s.file, s.format as TranscriptFormat, r.offset, this.options.maxLineBytes, this.deps.tailedFile?.(s.file), splitAt);
    // Rewritten or forgotten meanwhile: that path started over on its own (or shutting down: it stays released).
    if (s.released !== r || this.sessions.get(s.sessionId) !== s || this.closing) return;
    // The options the model is built under (a reconfigure skips a released session: see below).
    const options = this.options;
    const splits = read.splits ?? [];
    const upTo = splits[replayed.length] ?? read.events.length;
    /** The model of the transcript alone, up to where the released model had read it. */
    const fromTranscript = (): SessionModel => {
      const m = this.newModel(s.sessionId);
      m.applyAll(read.events.slice(0, upTo));
      return m;
    };
    let model: SessionModel | undefined;
    let failed = typeof steps === 'string' ? steps : undefined;
    if (failed === undefined && replayed.length > 0) {
      // In slices with yields between (a long transcript, many steps): requests are answered meanwhile.
      const w = this.budget.worker();
      try {
        model = await replayModel(() => this.newModel(s.sessionId), read.events.slice(0, upTo), splits, replayed, () => (w.left() ? undefined : w.pause()));
      } catch (err) {
        failed = `an edit did not apply again: ${describeError(err)}`;
      } finally {
        w.done();
      }
      // Rewritten or forgotten meanwhile, or shutting down (the store may be closed now): as above.
      if (s.released !== r || this.sessions.get(s.sessionId) !== s || this.closing) return;
      // Reconfigured meanwhile (SIGHUP, while the replay yielded): built again under the new budget.
      if (this.options !== options) return this.rebuild(s);
    } else if (failed === undefined) {
      model = fromTranscript();
    }
    if (!model || failed !== undefined) {
      // Fail safe: the transcript alone, as a new model (no plan of the old one is taken for it).
      // It counts the sections the lost edits had replaced again: it over-states, never under-states, what the agent holds.
      this.log.error({ sessionId: s.sessionId, file: s.file, why: failed, steps: s.replay.steps.length }, `${r.fromKeptSteps ? 'session opened with kept model steps' : 'released session'} rebuilt from its transcript WITHOUT the edits the agent applied: they could not be replayed from the plan log`);
      model = fromTranscript();
      s.replay.clear();
      this.expire(s.sessionId, s.life.rebuilt(), 'the session model was rebuilt without its applied edits');
    } else {
      const h = model.headroom();
      const was = r.headroom; // none after a restart: each replayed edit was checked against what it replaces (SessionModel.replayEach)
      // The model as it was released: the same tokens and sections (else say so: something it held is not in the transcript or plan log).
      if (was && (h.countedTokens !== was.countedTokens || h.sections !== was.sections)) {
        this.log.error({ sessionId: s.sessionId, file: s.file, tokens: h.countedTokens, releasedTokens: was.countedTokens, sections: h.sections, releasedSections: was.sections, steps: replayed.length }, 'released session rebuilt with other figures than it was released with');
      } else if (was) s.declined.carry(model); // the same sections: what the agent declined stays held
    }
    if (upTo < read.events.length) model.applyAll(read.events.slice(upTo));
    s.model = model;
    s.tailOffset = r.offset;
    s.released = undefined;
    this.rebuildDue.delete(s);
    if (s.failure) this.log.info({ sessionId: s.sessionId, code: s.failure.code, failedAt: s.failure.since }, 'session model rebuilt from its transcript after its lines could not be applied: it holds them now');
    s.failure = undefined;
    if (this.stopRebuildRetry(s)) {
      this.log.info({ sessionId: s.sessionId }, 'the plan log can be read again: released session rebuilt with its applied edits');
    }
    s.life.restored(model.version);
    this.log.info(
      { sessionId: s.sessionId, tokens: model.tokens(), pending: s.pending.length, plansReplayed: failed === undefined ? replayed.filter((st) => st.kind === 'edits').length : 0 },
      r.fromKeptSteps ? 'session rebuilt from its transcript and the model steps kept for it' : 'released session rebuilt from its transcript',
    );
    const pending = s.pending.splice(0);
    for (const p of pending) {
      const appliedTo = s.tailOffset;
      try {
        this.apply(s, p.events, p.toOffset);
      } catch (err) {
        // Lines that waited for the rebuild could not be applied (the tokenizer could not load,
        // say): released again and rebuilt from the transcript up to the last of them, as a batch
        // whose apply throws (the request that asked for the model gets INGEST_FAILED).
        this.applyFailed(s, err, appliedTo, pending.at(-1)?.toOffset ?? p.toOffset);
        return;
      }
    }
    // No append to ask: whether to plan from the rebuilt model (its advisory plan expired with the release).
    if (pending.length === 0) this.consider(s, zoneOf(model.headroom(), this.options));
    this.enforceBudget(s);
  }

  /**
   * The plan log could not be read for `s`'s rebuild: said once until a rebuild succeeds, and
   * when lines wait for the model (appended, or dropped with it) the rebuild is tried again after
   * a backoff (1 s doubling to 1 min); else on the next append or request. Returns the error the
   * request that asked for the model gets.
   */
  private planLogUnreadable(s: LiveSession, err: unknown): ContextdError {
    const why = describeError(err);
    if (!s.rebuildRetry) {
      s.rebuildRetry = { delayMs: REBUILD_RETRY_MS, timer: undefined };
      this.log.error({ sessionId: s.sessionId, file: s.file, err: why, steps: s.replay.steps.length }, 'released session not rebuilt now: the plan log cannot be read; it stays released with its applied edits and is rebuilt once the plan log can be read');
    } else this.log.debug({ sessionId: s.sessionId, err: why }, 'released session still not rebuilt: the plan log cannot be read');
    const retry = s.rebuildRetry;
    const r = s.released;
    if (retry.timer === undefined && r && (s.pending.length > 0 || r.offset > r.modelOffset)) {
      retry.timer = setTimeout(() => {
        retry.timer = undefined;
        if (this.closing || !s.released || this.sessions.get(s.sessionId) !== s) return;
        this.restore(s).then(undefined, (e: unknown) => this.notRebuilt(s, e));
      }, retry.delayMs);
      retry.timer.unref();
      retry.delayMs = Math.min(retry.delayMs * 2, REBUILD_RETRY_MAX_MS);
    }
    return new ContextdError(ErrorCode.STORE_FAILED, `session "${s.sessionId}" cannot be rebuilt now: the plan log cannot be read (${why}); it stays released and is rebuilt once it can be — try again`, { sessionId: s.sessionId, planLogUnreadable: true }, { cause: err });
  }

  /** The release ended (rebuilt, fed, rewritten): no rebuild to retry. True when one was due. */
  private stopRebuildRetry(s: LiveSession): boolean {
    if (!s.rebuildRetry) return false;
    clearTimeout(s.rebuildRetry.timer);
    s.rebuildRetry = undefined;
    return true;
  }

  /** A rebuild nobody awaited failed: logged (a plan log that cannot be read was said already). */
  private notRebuilt(s: LiveSession, err: unknown): void {
    if (isContextdError(err, ErrorCode.STORE_FAILED) && err.details?.planLogUnreadable === true) return;
    // Lines it read are not in any model (`applyFailed`): tried again at the idle sweep too, as no append may come.
    if (s.failure && s.released && this.current(s)) this.rebuildDue.add(s, 0);
    this.log.error({ sessionId: s.sessionId, file: s.file, err: describeError(err), ...(s.failure ? { code: s.failure.code } : {}) }, 'released session not rebuilt; retried on its next append or request');
  }

  /**
   * A conversation whose model the proxy keeps: listed, headroom-logged and readable like a
   * tailed session, but planned for by the proxy (which applies its plans itself).
   */
  attachProxied(sessionId: string, label: string, format: ProviderFormatName, model: SessionModel, proxied: ProxiedLink): LiveSession {
    const s = new LiveSession(sessionId, label, format, model, this.now(), 'proxy');
    s.proxied = proxied;
    this.sessions.set(sessionId, s);
    this.log.info({ sessionId, file: label, format, agentSessionId: proxied.agentSessionId ?? null }, 'session opened');
    this.link(s);
    return s;
  }

  /**
   * The proxy modelled another request of a conversation (its model may have been rebuilt).
   * `fresh` are the originals it showed for the first time: kept for harvest.
   */
  proxiedChanged(sessionId: string, model: SessionModel, plan?: Plan, fresh: readonly Message[] = []): void {
    const s = this.sessions.get(sessionId);
    if (!s || s.source !== 'proxy') return;
    s.model = model;
    const grew = fresh.length > 0;
    if (grew) {
      const m = model.meta().model;
      s.history.push([...(m ? [{ type: 'meta' as const, meta: { model: m } }] : []), ...fresh.map((message) => ({ type: 'message' as const, message }))]);
    }
    s.life.touched(this.now(), true);
    this.link(s);
    if (plan) {
      s.life.applied({ reason: [...new Set(plan.edits.map((e) => e.reason))].join(','), at: this.now(), planId: plan.planId }, model.version);
      const storing: Promise<void> = this.recordProxied(s, plan).finally(() => this.storing.delete(storing));
      this.storing.add(storing);
    }
    this.afterChange(s, plan ? 'edit' : undefined);
  }

  /** Store a plan the proxy applied, its texts as the plan log keeps them (`storedTexts`); a failure is logged. */
  private async recordProxied(s: LiveSession, plan: Plan): Promise<void> {
    try {
      const stored = await this.storedTexts(s, plan);
      this.deps.plans.record({ planId: plan.planId, sessionId: s.sessionId, createdAt: plan.createdAt, status: 'applied', headroomBefore: plan.headroomBefore, headroomAfter: plan.headroomAfter, plan: storedPlan(plan, stored) });
    } catch (err) {
      this.log.error({ sessionId: s.sessionId, planId: plan.planId, err: describeError(err) }, 'proxy plan not stored; continuing');
    }
  }

  /**
   * The agent's own message list for a session (`session.sync`), in order, as normalized
   * messages with stable ids. When the list shares a prefix with the last one fed (and the
   * model is unchanged since), what differs after it is truncated and the rest appended; any
   * other list (an edit applied, the agent's own compaction, a new budget) rebuilds the model. Creates the session when it is new; a tailed session of the
   * same id is taken over. Message indexes of later plans are indexes into this list.
   *
   * A session not in memory as a fed one (new, released, or tailed until now) takes a place under
   * `memory.maxFedSessions`: the least recently synced idle fed session is released for it, and
   * when none can go the list is refused (TOO_MANY_FED_SESSIONS) with nothing changed.
   */
  feed(sessionId: string, messages: readonly Message[], budgetTokens: number | undefined): { session: LiveSession; rebuilt: boolean } {
    let s = this.sessions.get(sessionId);
    if (s?.fed === undefined || s.released) this.makeRoomForFed(sessionId);
    if (!s) {
      s = new LiveSession(sessionId, `socket:${sessionId}`, 'openai-chat', this.newModel(sessionId, budgetTokens), this.now());
      this.sessions.set(sessionId, s);
      this.log.info({ sessionId, messages: messages.length }, 'session opened (fed over the socket)');
      this.prunePlans(s);
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
      const wasReleased = f !== undefined ? s.released : undefined;
      // Released from memory as a tailed session: no rebuild from its transcript may replace what is fed now
      // (nor is a failure to apply its transcript's lines its failure any more).
      s.released = undefined;
      s.failure = undefined;
      this.stopWaitingForSteps(s);
      s.replay.clear(); // its model is what the agent sends now: no step of the transcript's applies
      s.pending.length = 0;
      this.rebuildDue.delete(s);
      this.stopRebuildRetry(s);
      s.model = this.newModel(sessionId, budgetTokens);
      s.history.clear();
      this.expire(sessionId, s.life.rebuilt(), 'the agent sent a different context');
      // Released as a fed session, and this list begins with the one it was released with: that
      // part is rebuilt first, and when it comes back to the same figures, the edits the agent
      // declined stay held (a release must not make the daemon propose them again).
      const kept = f?.releasedList;
      if (kept && wasReleased?.headroom && f?.budgetTokens === budgetTokens && kept.count > 0 && kept.count <= ids.length && listDigest(ids.slice(0, kept.count)) === kept.digest) {
        const prefix = messages.slice(0, kept.count).map((message): TranscriptEvent => ({ type: 'message', message }));
        s.model.applyAll(prefix);
        s.history.push(prefix);
        const h = s.model.headroom();
        if (h.countedTokens === wasReleased.headroom.countedTokens && h.sections === wasReleased.headroom.sections) s.declined.carry(s.model);
        fresh = messages.slice(kept.count);
      }
    }
    for (const message of fresh) events.push({ type: 'message', message });
    try {
      s.model.applyAll(events);
    } catch (err) {
      // (the tokenizer could not load, say) What the model holds may be part of the list: the
      // next sync rebuilds it from its list, and until then it is an empty fed session, never a
      // tailed one (of a file "socket:<id>") that no release or harvest could handle.
      s.model = this.newModel(sessionId, budgetTokens);
      s.history.clear();
      s.fed = { ids: [], version: -1, budgetTokens };
      if (err instanceof ContextdError) throw err;
      throw new ContextdError(ErrorCode.INGEST_FAILED, `session "${sessionId}": the list could not be applied to its model (${describeError(err)}); nothing of it is kept — send it again`, { sessionId }, { cause: err });
    }
    s.history.push(events);
    s.fed = { ids, version: s.model.version, budgetTokens };
    s.life.touched(this.now(), fresh.length > 0);
    this.idle.touch(sessionId, this.now());
    this.afterChange(s);
    this.enforceBudget(s);
    return { session: s, rebuilt: !extends_ };
  }

  /**
   * Make a place for one more fed session in memory (`feed`): release the least recently synced
   * idle ones over `memory.maxFedSessions`, or throw TOO_MANY_FED_SESSIONS having released none.
   */
  private makeRoomForFed(sessionId: string): void {
    const budget = this.options.memory ?? MEMORY_DEFAULTS;
    const now = this.now();
    const held = this.held(undefined);
    const gone = fedSessionsToMakeRoom(held, budget, now);
    if (!gone) {
      const limit = budget.maxFedSessions ?? MEMORY_DEFAULTS.maxFedSessions;
      const inMemory = held.filter((h) => h.fed === true).length;
      this.log.warn({ sessionId, fedSessionsInMemory: inMemory, maxFedSessions: limit }, 'session.sync refused: memory.maxFedSessions fed sessions are in memory and none is idle');
      throw new ContextdError(
        ErrorCode.TOO_MANY_FED_SESSIONS,
        `session "${sessionId}" not synced: ${inMemory} sessions fed over the socket are in memory (memory.maxFedSessions = ${limit}), each synced by a connected client within memory.releaseAfterMs (${budget.releaseAfterMs} ms) or busy with a plan; nothing was changed — retry later, or raise memory.maxFedSessions`,
        { sessionId, limit, inMemory, releaseAfterMs: budget.releaseAfterMs },
      );
    }
    for (const id of gone) {
      const s = this.sessions.get(id);
      if (s) this.release(s, 'fed session limit');
    }
  }

  /**
   * Drop a fed session's model, history and caches (`release`). What only the daemon holds of it
   * stays: its plans and applied edits in the plan log, its archived originals, what the agent
   * declined (kept for a faithful rebuild: `feed`). Plans still open expire — pushed ones only
   * when no client is connected to answer them (`held`). The agent's next `session.sync` sends
   * its whole list and rebuilds the model from it (`rebuilt: true`).
   */
  private releaseFed(s: LiveSession, why: string): boolean {
    const f = s.fed;
    if (!f) return false;
    this.expire(s.sessionId, s.life.releasing(), 'the session was released from memory (fed over the socket: its next session.sync rebuilds it)');
    const headroom = s.model.headroom();
    if (s.planTimer) clearTimeout(s.planTimer);
    s.planTimer = undefined;
    // Only a model that is the last list fed (no ack since, no budget change) can be rebuilt to the same sections.
    const faithful = f.version === s.model.version && f.ids.length > 0;
    // What it was sent is harvested now: the idle harvest finds an empty history once it is
    // released, and its agent, gone or only quiet now, may exit without session.end.
    const sent = f.ids.length > 0 ? s.history.snapshot(s.sessionId) : undefined;
    s.fed = { ids: [], version: -1, budgetTokens: f.budgetTokens, ...(faithful ? { releasedList: { count: f.ids.length, digest: listDigest(f.ids) } } : {}) };
    s.released = { offset: 0, headroom, modelOffset: 0 };
    s.history.clear();
    this.dropModel(s, f.budgetTokens);
    this.log.info({ sessionId: s.sessionId, tokens: headroom.tokens, messages: f.ids.length, why }, `session fed over the socket released from memory (${why}); rebuilt by its next session.sync`);
    this.wakeReaders(s);
    // Memory was freed: sessions waiting to be rebuilt may fit now.
    for (const d of this.rebuildDue.keys()) this.schedule(d);
    if (sent) this.emit('fedReleased', s, sent);
    return true;
  }

  /** Throws FED_SESSION_RELEASED when `s` is a fed session released from memory: only its agent's next list rebuilds it. */
  assertFedInMemory(s: LiveSession): void {
    if (s.fed === undefined || !s.released) return;
    throw new ContextdError(ErrorCode.FED_SESSION_RELEASED, `session "${s.sessionId}" was released from memory: it is fed over the socket, so send its messages with session.sync to rebuild it, then ask again`, { sessionId: s.sessionId, released: true });
  }

  /**
   * Link a proxied conversation with the tailed transcript of the same agent session (Claude
   * Code's session id is its transcript's; Codex's is its rollout's). A tailed session with
   * several conversations through the proxy (side requests, sub-agents) links to the largest.
   */
  private link(p: LiveSession): void {
    const agentId = p.proxied?.agentSessionId;
    const t = agentId !== undefined ? this.sessions.get(agentId) : undefined;
    if (!t || t.source !== 'transcript') return;
    if (p.linkedSession !== t.sessionId) {
      p.linkedSession = t.sessionId;
      this.log.info({ sessionId: p.sessionId, linkedSession: t.sessionId }, 'proxied conversation linked to its tailed transcript');
    }
    const current = t.linkedSession !== undefined ? this.sessions.get(t.linkedSession) : undefined;
    if (!current || current === p || current.model.tokens() < p.model.tokens()) t.linkedSession = p.sessionId;
  }

  /**
   * The session whose history a harvest of `s` should read: a proxied conversation linked to a
   * tailed transcript is harvested from the transcript (one harvest per agent session, never two);
   * undefined when that transcript's session is gone (it was harvested on its own).
   */
  harvestTarget(s: LiveSession): LiveSession | undefined {
    if (s.source !== 'proxy' || s.linkedSession === undefined) return s;
    // undefined: the transcript's session is already gone, harvested (or to be read again) on its own
    return this.sessions.get(s.linkedSession);
  }

  /** The watermarks sessions are judged by (for clients that compute zones). */
  watermarks(): { reserveRatio: number; softWatermark: number; hysteresis: number } {
    return { reserveRatio: this.options.reserveRatio, softWatermark: this.options.softWatermark, hysteresis: this.options.hysteresis };
  }

  /** The transcript was truncated or replaced: drop the model; the tailer re-reads from 0. */
  resetSession(file: string, sessionId: string, reason: string): void {
    this.unopened.delete(file); // read again from 0
    const s = this.sessions.get(sessionId);
    if (!s || s.fed) return;
    // Batches read before the rewrite describe what is gone.
    this.queued.drop(s);
    this.wakeReaders(s);
    s.queuedOffset = undefined;
    s.model = this.newModel(sessionId);
    s.released = undefined;
    s.failure = undefined;
    this.stopWaitingForSteps(s);
    this.stopRebuildRetry(s);
    s.pending.length = 0;
    s.tailOffset = undefined;
    s.replay.clear(); // the edits applied to what is gone are gone with it (kept steps too)
    this.expire(sessionId, s.life.rebuilt(), `transcript ${reason}`);
    this.prunePlans(s); // (no rebuild replays the plans applied before)
    this.log.warn({ sessionId, file, reason }, 'transcript rewritten: rebuilding the session model');
  }

  /**
   * Forget a session (its archive and logs stay in SQLite): transcript gone, or finished. The
   * model steps kept for a restart go with a transcript that is gone; a finished one keeps them
   * (its transcript is read again after a restart, and the agent may resume it).
   */
  removeSession(sessionId: string, why = TRANSCRIPT_REMOVED): void {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    if (why === TRANSCRIPT_REMOVED) s.replay.clear();
    this.stopWaitingForSteps(s);
    this.dropScheduled(s);
    this.runQueue.delete(s);
    this.sessions.delete(sessionId);
    this.wakeReaders(s);
    this.byFile.delete(s.file);
    // a tailed session no longer names a conversation that is gone (the conversation's own link stays: harvest reads it)
    const linked = s.linkedSession !== undefined ? this.sessions.get(s.linkedSession) : undefined;
    if (linked?.linkedSession === sessionId && linked.source === 'transcript') linked.linkedSession = undefined;
    this.idle.end(sessionId);
    this.deps.memoryFreed?.();
    this.expire(sessionId, s.life.expireAll(), why);
    if (why === TRANSCRIPT_REMOVED) this.prunePlans(s);
    this.log.info({ sessionId, file: s.file, why }, 'session closed');
  }

  /**
   * The session finished (session.end, or found idle). Returns false when it had already
   * ended (nothing more to harvest until it grows again).
   */
  endSession(s: LiveSession): boolean {
    this.idle.end(s.sessionId);
    return s.life.end();
  }

  /** Sessions idle past the timeout (each reported once until it is active again). */
  idleSessions(): LiveSession[] {
    return this.idle
      .due(this.now())
      .map((id) => this.sessions.get(id))
      // a session with read lines still to apply is active, only behind
      .filter((s): s is LiveSession => s !== undefined && !s.ended && !this.queued.has(s));
  }

  /**
   * A client subscribed to the session: the current open plan, to push to it at once, or
   * undefined — then a fresh plan is made at once when the zone calls for one. A session
   * released since the subscribe's reply (the memory budget) is rebuilt first: the lifecycle is
   * asked about the model, never about the empty placeholder a release leaves.
   */
  async subscribed(s: LiveSession): Promise<Plan | undefined> {
    // Nothing is released between the end of restore() and the code after the await (no I/O, no timer between).
    if (s.released) await this.restore(s);
    if (s.released || this.sessions.get(s.sessionId) !== s) return undefined;
    const open = s.life.onSubscribe(this.now());
    if (open) return open.plan;
    this.afterChange(s);
    return undefined;
  }

  /** Plan now, regardless of watermarks (session.compact). */
  async compactNow(sessionId: string, targetHeadroom: number | undefined, dryRun: boolean): Promise<Plan> {
    const s = await this.requireLoaded(sessionId);
    // The proxy applies it to the conversation's next request (and records it through proxiedChanged).
    if (s.source === 'proxy' && !dryRun && s.proxied) return s.proxied.compact(targetHeadroom);
    // The pump's plan of this session first: two at once would race to publish and archive.
    if (!dryRun) await this.planIdle(s);
    const work = this.makePlan(s, 'manual', targetHeadroom, dryRun, false);
    this.inFlight.add(work);
    try {
      const made = await work;
      if (!made) throw new ContextdError(ErrorCode.PLAN_EXPIRED, `session "${sessionId}" changed under the plan (transcript rewritten or rewound): ask again`, { sessionId });
      if (dryRun) return { ...made.plan, dryRun: true } as Plan;
      const published = this.publish(s, made, true);
      if (!published) throw new ContextdError(ErrorCode.PLAN_EXPIRED, `session "${sessionId}" changed under the plan (closed, rewound, or planned from a newer model): ask again`, { sessionId });
      return published;
    } finally {
      this.inFlight.delete(work);
      // A plan the pump found due while this one was made was passed over: look again.
      if (!dryRun && this.current(s)) this.consider(s, zoneOf(s.model.headroom(), this.options));
    }
  }

  /** The agent's answer to a plan. Returns the session's headroom after it. */
  acknowledge(planId: string, applied: boolean, editIds: readonly string[] | undefined, reason: string | undefined): { headroom: number } {
    const s = this.sessionOfPlan(planId);
    const open = s?.life.openPlan(planId);
    if (!s || !open) {
      const stored = this.deps.plans.get(planId);
      const why = stored ? `plan "${planId}" is ${stored.status}${stored.statusReason ? ` (${stored.statusReason})` : ''}` : `plan "${planId}" is unknown`;
      throw new ContextdError(ErrorCode.PLAN_EXPIRED, `${why}: wait for the next compaction.proposed or call session.compact`, { planId });
    }
    s.life.answered(planId);
    const { plan } = open;
    if (!applied) {
      this.deps.plans.setStatus(planId, 'rejected', reason);
      this.decline(s, open.generation, plan.edits, plan.tokensBefore);
      this.log.info({ sessionId: s.sessionId, planId, reason }, 'plan rejected by the agent; its sections are left out of automatic plans until the zone worsens or the cooldown passes');
      return { headroom: s.model.headroom().headroom };
    }
    if (open.generation !== s.life.generation) {
      this.deps.plans.setStatus(planId, 'expired', 'the session model was rebuilt');
      throw new ContextdError(ErrorCode.PLAN_EXPIRED, `plan "${planId}" is expired (the session was rebuilt): wait for the next compaction.proposed`, { planId });
    }
    const chosen = editIds ? plan.edits.filter((e) => editIds.includes(e.editId)) : plan.edits;
    const before = s.model.headroom();
    try {
      applyPlan(s.model, plan, chosen.map((e) => e.editId));
    } catch (err) {
      this.deps.plans.setStatus(planId, 'expired', describeError(err));
      throw err;
    }
    const after = s.model.headroom();
    // What the agent left out of a partial apply it declined (section ids survive the edits applied).
    this.decline(s, open.generation, plan.edits.filter((e) => !chosen.includes(e)), s.model.tokens());
    const status = chosen.length === plan.edits.length ? 'applied' : 'partially-applied';
    // Where it was applied, for a rebuild to replay it there (a release drops the model: replay-log.ts).
    const offset = s.fed === undefined ? s.tailOffset : undefined;
    const replayable = s.replay.unreplayable === undefined;
    s.replay.applied(planId, offset);
    try {
      if (!this.deps.plans.setApplied(planId, status, reason, chosen.map((e) => e.editId), offset)) s.replay.markUnreplayable(`plan ${planId} is not in the plan log`);
    } catch (err) {
      // The agent applied the edits and the model holds them now: the ack stands (refusing it
      // would tell the agent the daemon does not hold what it does). Only a rebuild cannot
      // replay them, so the session stays in memory (below).
      s.replay.markUnreplayable(`plan ${planId} was not stored as applied: ${describeError(err)}`);
      this.log.error({ sessionId: s.sessionId, planId, err: describeError(err) }, 'plan applied by the agent, but the plan log could not record it');
    } finally {
      // (a session fed over the socket is never released: nothing to say)
      if (replayable && s.replay.unreplayable !== undefined && s.fed === undefined) this.log.warn({ sessionId: s.sessionId, planId, why: s.replay.unreplayable }, 'session kept in memory from now on: the edits just applied could not be recorded for a rebuild');
    }
    // The archived originals now name the plan whose edit replaced them (a failure leaves them
    // naming the plan that first proposed them: nothing is lost, the ack stands).
    try {
      this.deps.archive.relink(chosen.map((e) => ({ handle: e.handle, planId, editId: e.editId, reason: e.reason, createdAt: plan.createdAt })));
    } catch (err) {
      this.log.warn({ sessionId: s.sessionId, planId, err: describeError(err) }, 'archived originals still name the plan that first proposed them: relinking them failed');
    }
    s.life.applied({ reason: chosen.map((e) => e.reason).join(','), at: this.now(), planId }, s.model.version);
    this.log.info(
      { sessionId: s.sessionId, planId, edits: chosen.length, headroomBefore: before.headroom, headroomAfter: after.headroom, tokensBefore: before.tokens, tokensAfter: after.tokens },
      'plan applied by the agent',
    );
    this.afterChange(s, 'edit');
    return { headroom: after.headroom };
  }

  /**
   * Remember edits the agent declined, and the size of context it kept (the model's own count),
   * for the session's automatic plans (only edits of the current model: section ids are its own).
   */
  private decline(s: LiveSession, generation: number, edits: readonly Plan['edits'][number][], keepTokens: number): void {
    if (edits.length === 0 || generation !== s.life.generation) return;
    s.declined.decline(s.model, edits, keepTokens, this.declineState(s.model), this.now());
  }

  /** Where `model` stands for DeclinedEdits: its zone and headroom. */
  private declineState(model: SessionModel): DeclineState {
    const headroom = model.headroom().headroom;
    return { zone: zoneOf({ headroom }, this.options), headroom };
  }

  /**
   * Stop taking and applying transcript lines and start no plan (shutdown, before the tailer
   * closes): lines read but not applied are dropped — nothing needs them (a harvest reads the
   * transcript itself, and a restart reads transcripts from the start) — and a read waiting at
   * the gate (`room`) goes on at once, so closing the tailer never waits for the backlog.
   */
  stopIngest(): void {
    this.closing = true;
    this.stopping.abort(new ContextdError(ErrorCode.LIFECYCLE, 'contextd is shutting down: the plan was abandoned'));
    for (const s of [...this.runQueue]) this.queued.drop(s);
    this.rebuildDue.clear();
    this.planQueue.clear();
    this.runQueue.clear();
    this.deferredPlans.clear();
    this.planWaiting.clear();
    this.queued.releaseAll();
    this.gate.wakeAll();
    for (const s of this.sessions.values()) {
      if (s.planTimer) clearTimeout(s.planTimer);
      s.planTimer = undefined;
    }
    // Sessions waiting for their kept steps stay released (the steps stay kept for the next
    // start); requests waiting for their model go on and find it released.
    for (const s of this.replayWaits.keys()) this.stopWaitingForSteps(s);
    this.replayQueue.clear();
  }

  /**
   * Stop ingest and planning (`stopIngest`), then wait for plans in flight, which stop at their
   * next step (a summarizer waiting for an LLM is cut short), so shutdown never waits for one.
   */
  async drain(): Promise<void> {
    this.stopIngest();
    await Promise.allSettled([...this.inFlight, ...this.storing, this.pumping]);
  }

  /** The session an open plan belongs to. */
  sessionOfPlan(planId: string): LiveSession | undefined {
    return this.all().find((x) => x.life.openPlan(planId) !== undefined);
  }

  /** Plans proposed but not yet answered (for status). */
  openPlanCount(sessionId: string): number {
    return this.sessions.get(sessionId)?.life.openPlanCount ?? 0;
  }

  private newModel(sessionId: string, budgetTokens = this.options.budgetTokens): SessionModel {
    return new SessionModel({
      sessionId,
      tokenCounter: this.deps.tokenCounter,
      ...(this.deps.tokenCache ? { tokenCache: this.deps.tokenCache } : {}),
      ...(this.deps.derivedCache ? { derivedCache: this.deps.derivedCache } : {}),
      reserveRatio: this.options.reserveRatio,
      ...(budgetTokens !== undefined ? { budgetTokens } : {}),
    });
  }

  private afterChange(s: LiveSession, forcedReason?: string): void {
    const h = s.model.headroom();
    const seen = s.life.observe(h, this.options, forcedReason);
    if (seen.logReason) {
      const sample = { sessionId: s.sessionId, at: this.now(), tokens: h.tokens, total: h.total, reserveRatio: h.reserveRatio, headroom: h.headroom, sections: h.sections, reportedTokens: h.reportedTokens, reason: seen.logReason, file: s.file };
      this.log.info({ ...sample, zone: seen.zone }, 'headroom');
      try {
        this.deps.headroomLog.record(sample);
      } catch (err) {
        this.log.error({ sessionId: s.sessionId, err: describeError(err), code: (err as ContextdError).code }, 'headroom sample not stored; continuing');
      }
      if (seen.zoneChange) this.emit('zone', s, seen.zoneChange.zone, seen.zoneChange.previous);
    }
    this.consider(s, seen.zone);
  }

  private subscribedTo(s: LiveSession): boolean {
    return this.deps.hasSubscribers ? this.deps.hasSubscribers(s.sessionId) : true;
  }

  private throttle() {
    return { ...this.options, advisoryPlanIntervalMs: this.options.advisoryPlanIntervalMs ?? ADVISORY_PLAN_INTERVAL_MS };
  }

  /** Ask the lifecycle whether to plan; queue the session, or arm a timer to ask again. */
  private consider(s: LiveSession, zone: Zone): void {
    if (s.source === 'proxy') return; // the proxy plans for its conversations itself
    if (this.closing || this.planQueue.has(s) || !this.current(s)) return;
    const step = s.life.nextStep(zone, s.model.version, this.subscribedTo(s), this.now(), this.throttle());
    if (s.planTimer) clearTimeout(s.planTimer);
    s.planTimer = undefined;
    if (step.kind === 'none') return;
    if (step.kind === 'wait') {
      s.planTimer = setTimeout(() => {
        s.planTimer = undefined;
        this.consider(s, zoneOf(s.model.headroom(), this.options));
      }, Math.max(0, step.until - this.now()));
      s.planTimer.unref();
      return;
    }
    this.planQueue.add(s);
    this.schedule(s);
  }

  /** Put a session at the back of the run queue (if not in it) and make sure the pump runs. */
  private schedule(s: LiveSession): void {
    this.runQueue.add(s);
    this.startPump();
  }

  /** The longest run of turns before a yield (LoopOptions.turnSliceMs, else TURN_SLICE_MS). */
  private get turnSliceMs(): number {
    return this.options.turnSliceMs ?? TURN_SLICE_MS;
  }

  private startPump(): void {
    this.pumping ??= this.pump().finally(() => {
      this.pumping = undefined;
      // A session queued between the pump's last look and this callback still gets its turn.
      if (this.runQueue.size > 0 && !this.closing) this.startPump();
    });
  }

  /**
   * Run turns, round-robin, in slices of TURN_SLICE_MS with a yield to the event loop between
   * slices (and before the first: never inside the caller). A turn applies the session's
   * queued batches (a session with more left than a slice allows goes to the back and plans
   * once they are all applied), then makes its plan if one is queued.
   */
  private async pump(): Promise<void> {
    const w = this.budget.worker();
    try {
      while (this.runQueue.size > 0 && !this.closing) {
        await w.pause();
        do this.turn(w);
        while (this.runQueue.size > 0 && !this.closing && w.left());
      }
    } finally {
      w.done();
    }
  }

  /** The most plans in flight at once (LoopOptions.maxConcurrentPlans, else PLAN_CONCURRENCY). */
  private get maxConcurrentPlans(): number {
    return Math.max(1, this.options.maxConcurrentPlans ?? PLAN_CONCURRENCY);
  }

  /**
   * The next session's turn: its queued batches (while the slice lasts), then its plan, started and
   * left to run beside the pump (or put in line when every plan slot is taken).
   */
  private turn(w: BudgetWorker): void {
    const s = this.runQueue.values().next().value as LiveSession | undefined;
    if (!s) return;
    this.runQueue.delete(s);
    if (!this.current(s)) return;
    if (s.released && !this.queued.has(s)) this.rebuildDropped(s);
    if (this.queued.has(s) && !this.applyQueued(s, () => w.left())) {
      this.runQueue.add(s); // the rest in a later turn
      // Its plan waits for the rest (one plan for the whole backlog), but one turn at most:
      // under sustained load the backlog never empties, and plans must still be made.
      // (Only a queued plan is put off: marking a session with none would let its next plan,
      // queued mid-backlog, run at once on a partly applied model.)
      if (!this.planQueue.has(s)) return;
      if (!this.deferredPlans.delete(s)) {
        this.deferredPlans.add(s);
        return;
      }
    }
    if (!this.planQueue.has(s) || this.closing) return;
    // Every slot taken, or others came first: wait in line (a finished plan calls the first).
    const first = this.planWaiting.values().next().value as LiveSession | undefined;
    if (this.plansRunning >= this.maxConcurrentPlans || (first !== undefined && first !== s)) {
      this.planWaiting.add(s);
      return;
    }
    this.planWaiting.delete(s);
    this.planQueue.delete(s);
    this.deferredPlans.delete(s);
    this.wakeReaders(s); // held for this plan: it starts now (reads stay held while it runs) or is not due
    // Decide again: the session may have changed while it waited.
    const zone = zoneOf(s.model.headroom(), this.options);
    const step = s.life.nextStep(zone, s.model.version, this.subscribedTo(s), this.now(), this.throttle());
    if (step.kind === 'wait') {
      this.consider(s, zone);
    } else if (step.kind === 'plan') {
      this.startPlan(s, step.mode, step.advisory);
    }
    // A slot still free: the next in line need not wait for a plan to finish.
    this.callNextWaiting();
  }

  /** Start a session's plan in a plan slot; the turn goes on without it. */
  private startPlan(s: LiveSession, mode: PlanMode, advisory: boolean): void {
    this.plansRunning++;
    const work: Promise<void> = this.runPlan(s, mode, advisory).finally(() => {
      this.plansRunning--;
      this.inFlight.delete(work);
      this.callNextWaiting();
    });
    this.inFlight.add(work);
  }

  /** Give the first session waiting for a plan slot its turn, when a slot is free. */
  private callNextWaiting(): void {
    if (this.closing || this.plansRunning >= this.maxConcurrentPlans) return;
    const first = this.planWaiting.values().next().value as LiveSession | undefined;
    if (first) this.schedule(first);
  }

  private async runPlan(s: LiveSession, mode: PlanMode, advisory: boolean): Promise<void> {
    try {
      const made = await this.makePlan(s, mode, undefined, false, advisory);
      if (!made) return;
      if (made.plan.edits.length === 0) {
        this.log.info({ sessionId: s.sessionId, mode, headroom: made.plan.headroomBefore }, 'nothing to compact');
        return;
      }
      this.publish(s, made);
    } catch (err) {
      if (this.stopping.signal.aborted) this.log.info({ sessionId: s.sessionId, mode }, 'plan abandoned: contextd is shutting down');
      else this.log.error({ sessionId: s.sessionId, mode, err: describeError(err), code: (err as ContextdError).code }, 'planning failed; will retry when the session changes');
    } finally {
      // The model may have moved on while the plan was made: look again.
      if (this.current(s)) this.consider(s, zoneOf(s.model.headroom(), this.options));
    }
  }

  /** Whether `s` is still the session registered under its id (not removed, nor opened anew). */
  private current(s: LiveSession): boolean {
    return this.sessions.get(s.sessionId) === s;
  }

  /** Resolves once no plan of `s` is in flight (a manual plan waits for the pump's: never two at once). */
  private async planIdle(s: LiveSession): Promise<void> {
    while (s.planInFlight) await s.planInFlight.then(undefined, () => undefined);
  }

  /**
   * Plan from the session's current model. Resolves to undefined when the plan went stale while
   * it was made: the model was replaced (transcript rewritten, budget reconfigured) or sections
   * it read left the context (truncated, reset, an edit applied). A plan that is not a dry run
   * is the session's `planInFlight` until it settles.
   */
  private makePlan(s: LiveSession, mode: PlanMode, targetHeadroom: number | undefined, dryRun: boolean, advisory: boolean): Promise<Planned | undefined> {
    const work = this.planFrom(s, mode, targetHeadroom, dryRun, advisory);
    if (dryRun) return work;
    const tracked: Promise<Planned | undefined> = work.finally(() => {
      if (s.planInFlight === tracked) s.planInFlight = undefined;
      this.wakeReaders(s);
    });
    s.planInFlight = tracked;
    return tracked;
  }

  private async planFrom(s: LiveSession, mode: PlanMode, targetHeadroom: number | undefined, dryRun: boolean, advisory: boolean): Promise<Planned | undefined> {
    const model = s.model;
    const w = this.budget.worker();
    const slice = w.hook();
    const { signal } = this.stopping;
    // A plan stops at its next step on shutdown (its summarizer call is aborted by `signal`).
    const pause = (): Promise<void> | undefined => {
      if (signal.aborted) return Promise.reject(signal.reason as Error);
      return slice();
    };
    const basis = { model, generation: s.life.generation, epoch: model.epoch };
    if (!dryRun) s.life.planStarted(model.version, this.now(), advisory);
    // An automatic plan leaves alone what the agent declined (a manual one is asked for: it may propose anything).
    const declined = mode === 'manual' ? undefined : s.declined.held(model, this.declineState(model), this.options.reserveRatio, this.now());
    try {
      const plan = await planCompaction(model, {
        mode,
        reserveRatio: this.options.reserveRatio,
        softWatermark: this.options.softWatermark,
        hysteresis: this.options.hysteresis,
        summarizer: this.deps.summarizer,
        tokenCounter: this.deps.tokenCounter,
        cache: s.summaryCache,
        now: this.now,
        pause,
        signal,
        ...(declined ? { declined } : {}),
        ...(targetHeadroom !== undefined ? { targetHeadroom } : {}),
      }).catch((err: unknown) => {
        if (!signal.aborted && err instanceof ContextdError && err.code === ErrorCode.PLAN_EXPIRED) return undefined;
        throw err;
      });
      if (!plan) {
        this.log.info({ sessionId: s.sessionId }, 'plan dropped: sections it replaces left the context while it was made');
        return undefined;
      }
      const made = this.standing(s, { ...basis, plan }, 'it was made');
      if (!made) return undefined;
      // Originals go to the archive before anyone can apply the plan: nothing is lost.
      if (made.plan.edits.length > 0 && !dryRun && !(await this.archiveOriginals(s, made, pause))) return undefined;
      if (dryRun) return made;
      return { ...made, stored: await this.storedTexts(s, made.plan) };
    } finally {
      w.done();
      // Only real plans age the cache: dry runs (a client's question, as often as it likes) would
      // otherwise drop the summaries the next real plan reuses (with an LLM summarizer, paid calls).
      if (!dryRun) {
        s.summaryCache.endPlan();
        s.life.planFinished();
      }
    }
  }

  /**
   * Archive what each edit of `plan` summarized (the planner's `originalsOf`, never the model
   * read again: it may have moved on). False, with nothing stored, when an edit has no originals
   * to archive or the plan went `stale` meanwhile: the plan must be dropped.
   */
  private async archiveOriginals(s: LiveSession, made: Planned, pause: () => Promise<void> | undefined): Promise<boolean> {
    const { plan } = made;
    const at = { sessionId: s.sessionId, planId: plan.planId, createdAt: plan.createdAt };
    const sources = plan.edits.map((e) => {
      const source = originalsOf(e);
      return { e, source, hollow: !source || e.replaces.some((id) => source.messagesOf(id).length === 0) };
    });
    // A handle naming no originals would be relinked, never filled, for good.
    const hollow = sources.filter((x) => x.hollow).map(({ e }) => e.editId);
    if (hollow.length > 0) {
      this.log.warn({ sessionId: s.sessionId, planId: plan.planId, editIds: hollow }, 'plan dropped: edits with no originals to archive');
      return false;
    }
    // A handle names its originals, and archived rows are never deleted: an edit proposed again
    // (the plan before was rejected or superseded) is already archived, so its originals are
    // neither gathered, nor scanned for secrets, nor written a second time. Its row names the
    // plan that first proposed it until a plan's edit is applied (acknowledge relinks it): a
    // relink on every proposal rewrote each large row once per re-plan, the most of a plan's
    // SQLite writes.
    const known = new Set(plan.edits.filter((e) => s.archived.has(e.handle) || this.deps.archive.has(e.handle)).map((e) => e.handle));
    // One edit's originals at a time, with a pause between: redacting runs a secret scan over
    // every original, tens of ms for a large edit, and all at once would hold the event loop.
    const fresh: Awaited<ReturnType<typeof redactEntries>> = [];
    for (const { e, source } of sources) {
      if (known.has(e.handle) || !source) continue;
      await pause();
      fresh.push(...(await redactEntries(archiveEntries(source, [e], at), this.deps.archiveFilter)));
    }
    if (!this.standing(s, made, 'its originals were archived')) return false;
    if (fresh.length > 0) this.deps.archive.putMany(fresh);
    for (const e of plan.edits) s.archived.add(e.handle);
    const redacted = fresh.reduce((n, e) => n + e.redactions.reduce((m, r) => m + r.count, 0), 0);
    if (redacted > 0) this.log.info({ sessionId: s.sessionId, planId: plan.planId, redacted }, 'secrets redacted from archived originals');
    return true;
  }

  /**
   * The texts of `plan` that quote the transcript — its summaries and the survival check's facts
   * — as the plan log stores them: through the archive's filter (`archiveFilter`, secrets
   * redacted), like the originals they quote. Those of the session's last stored plan are not
   * scanned again. Undefined without a filter (archive.redactSecrets off): stored as they are.
   */
  private async storedTexts(s: LiveSession, plan: Plan): Promise<ReadonlyMap<string, string> | undefined> {
    const filter = this.deps.archiveFilter;
    if (!filter) return undefined;
    const texts = new Set([...plan.edits.map((e) => e.summary.content), ...plan.survival.missing.map((m) => m.fact)]);
    const out = new Map<string, string>();
    const todo: string[] = [];
    for (const t of texts) {
      const known = s.storedTexts.get(t);
      if (known !== undefined) out.set(t, known);
      else todo.push(t);
    }
    if (todo.length > 0) {
      const { messages } = await filter(todo.map((text, i): Message => ({ id: `stored-${i}`, role: 'assistant', text })));
      todo.forEach((t, i) => out.set(t, messages[i]?.text ?? UNSTORED_TEXT));
    }
    s.storedTexts = out;
    return out;
  }

  /**
   * `made` as it stands in `s` now (message ranges rebased when the context moved under it), or
   * undefined — logged as dropped while `during` — when it must not be archived or published:
   * the session was closed or rebuilt, or a section an edit replaces left the context or changed
   * (`planStanding`). A truncated tail, an append or an edit elsewhere keep it. The one check,
   * made after planning, before archiving and right before publishing.
   */
  private standing(s: LiveSession, made: Planned, during: string): Planned | undefined {
    const { plan, model } = made;
    if (!this.current(s) || s.model !== model || s.life.generation !== made.generation) {
      this.log.info({ sessionId: s.sessionId, planId: plan.planId }, `plan dropped: the session was closed or rebuilt while ${during}`);
      return undefined;
    }
    if (model.epoch === made.epoch) return made;
    const rebased = planStanding(model, plan);
    if (!rebased) {
      this.log.info({ sessionId: s.sessionId, planId: plan.planId }, `plan dropped: sections it replaces left the context or changed while ${during}`);
      return undefined;
    }
    return { ...made, plan: rebased, epoch: model.epoch };
  }

  /**
   * Propose a plan made of `s`: stored, logged and emitted for the daemon to push. Undefined when
   * it must not be: it no longer stands (`standing`), or an open plan was made from a newer model
   * (an older plan never supersedes it). `handed`: it is the answer to a request (session.compact),
   * in the caller's hands like a pushed plan (it then pins the model in memory until answered).
   */
  private publish(s: LiveSession, made: Planned, handed = false): Plan | undefined {
    const plan = this.standing(s, made, 'it was archived')?.plan;
    if (!plan) return undefined;
    if (s.life.hasNewerThan(plan)) {
      this.log.info({ sessionId: s.sessionId, planId: plan.planId, modelVersion: plan.modelVersion }, 'plan dropped: a plan of a newer model is open');
      return undefined;
    }
    const pushed = handed || this.subscribedTo(s);
    this.expire(s.sessionId, s.life.propose(plan, pushed), 'superseded by a newer plan');
    this.deps.plans.record({ planId: plan.planId, sessionId: s.sessionId, createdAt: plan.createdAt, status: 'proposed', headroomBefore: plan.headroomBefore, headroomAfter: plan.headroomAfter, plan: storedPlan(plan, made.stored) });
    if (++s.plansSincePrune >= PRUNE_PLANS_EVERY) this.prunePlans(s);
    this.log.info(
      {
        sessionId: s.sessionId,
        planId: plan.planId,
        mode: plan.mode,
        advisory: !pushed,
        headroomBefore: plan.headroomBefore,
        headroomAfter: plan.headroomAfter,
        tokensBefore: plan.tokensBefore,
        tokensAfter: plan.tokensAfter,
        // counts only: the facts quote the transcript (secrets and all)
        survival: { checked: plan.survival.checked, missing: plan.survival.missing.length, reinjected: plan.survival.reinjected },
        // per-section scores: in the stored plan and the planner's debug lines (one line per plan
        // at info, written synchronously: every edit's score factors made it several kB)
        edits: plan.edits.map((e) => ({ editId: e.editId, reason: e.reason, replaces: e.replaces, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter, handle: e.handle })),
      },
      'compaction planned',
    );
    this.emit('plan', s, plan);
    return plan;
  }

  /**
   * Bound the plans `s` keeps in the plan log (PlanLog.prune: the applied plans its model's steps
   * name keep their bodies); a failure is logged, nothing else.
   */
  private prunePlans(s: LiveSession): void {
    s.plansSincePrune = 0;
    const replayed = s.replay.steps.flatMap((step) => (step.kind === 'edits' ? [step.planId] : []));
    try {
      const gone = this.deps.plans.prune(s.sessionId, KEEP_ENDED_PLAN_BODIES, KEEP_ENDED_PLAN_ROWS, replayed);
      if (gone.bodies > 0 || gone.rows > 0) this.log.debug({ sessionId: s.sessionId, ...gone }, 'plans no rebuild replays pruned');
    } catch (err) {
      this.log.warn({ sessionId: s.sessionId, err: describeError(err) }, 'plans not pruned; tried again later');
    }
  }

  private expire(sessionId: string, planIds: readonly string[], why: string): void {
    for (const id of planIds) {
      try {
        this.deps.plans.setStatus(id, 'expired', why);
      } catch (err) {
        this.log.error({ sessionId, planId: id, err: describeError(err) }, 'plan status not stored');
      }
    }
  }
}

/** A digest of a fed list's message ids (content hashes), to know a later list begins with it. */
function listDigest(ids: readonly string[]): string {
  return sha1Hex(ids.join('\n'));
}

/** What stands in the plan log for a text the redaction filter returned nothing for. */
const UNSTORED_TEXT = '[not stored: the secret scan returned no text]';

/**
 * `plan` as the plan log stores it: its summaries and survival facts replaced by `stored`'s
 * redacted texts (a replayed summary is counted from its edit's `tokensAfter`, not its text:
 * `replacementOf`). Without `stored`, the plan as it is.
 */
function storedPlan(plan: Plan, stored: ReadonlyMap<string, string> | undefined): Plan {
  if (!stored) return plan;
  const text = (t: string): string => stored.get(t) ?? UNSTORED_TEXT;
  return {
    ...plan,
    edits: plan.edits.map((e) => ({ ...e, summary: { ...e.summary, content: text(e.summary.content) } })),
    survival: { ...plan.survival, missing: plan.survival.missing.map((m) => ({ ...m, fact: text(m.fact) })) },
  };
}
