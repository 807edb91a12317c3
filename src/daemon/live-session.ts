import type { TranscriptFormat } from '../ingest/types.js';
import type { SessionModel } from '../model/index.js';
import type { HeadroomSnapshot } from '../model/types.js';
import type { TranscriptEvent } from '../model/messages.js';
import { SummaryCache, type Plan } from '../compact/index.js';
import type { ProviderFormatName } from '../proxy/index.js';
import { SessionHistory } from '../harvest/index.js';
import { SessionLifecycle } from './lifecycle.js';
import { DeclinedEdits } from './declined-edits.js';
import { ReplayLog, type StepSink } from './replay-log.js';

/** What the daemon knows of a conversation through the proxy. */
export interface ProxiedLink {
  /** The session id the agent named in its requests (Claude Code's transcript id, Codex's rollout id). */
  readonly agentSessionId: string | undefined;
  /** Compact it now; its next request carries the summaries (session.compact). */
  readonly compact: (targetHeadroom: number | undefined) => Promise<Plan>;
}

/**
 * A session the daemon follows: its model, its history for harvest, its caches, and its
 * lifecycle state (zone, throttle, open plans, ended) — which only `SessionLifecycle` changes.
 */
export class LiveSession {
  readonly life: SessionLifecycle;
  /**
   * Every message of a session without a transcript (fed over the socket, or through the
   * proxy), for harvest. A tailed session keeps none: its transcript is the history, read back
   * when it is harvested (`harvestEndOffset`), so what a session holds in memory is its model,
   * which the memory budget counts.
   */
  readonly history = new SessionHistory();
  /** Templates bootstrapped into this session (fed success counts on session.end). */
  readonly bootstrappedTemplates = new Set<string>();
  /**
   * Set when an agent feeds this session's messages over the socket (`session.sync`) instead
   * of the daemon tailing a transcript: the ids of the last list fed, the model version they
   * produced, and the budget they were planned against (a longer list with the same prefix is
   * appended; anything else rebuilds the model). Released from memory, the list is kept only as
   * `releasedList`, its length and digest (`SessionManager.releaseFed`): the next list is
   * rebuilt from, and when it begins with that list, what the agent declined is kept.
   */
  fed: { ids: readonly string[]; version: number; budgetTokens: number | undefined; releasedList?: { readonly count: number; readonly digest: string } } | undefined;
  /** Summaries of unchanged sections are reused across re-plans (dropped on release). */
  summaryCache = new SummaryCache();
  /** Sections whose edits the agent declined: left out of automatic plans for a while. */
  readonly declined = new DeclinedEdits();
  /**
   * Handles this session's plans archived (or found archived): an edit proposed again is
   * neither looked up nor written again. Archived rows are never deleted, so a handle in here
   * stays true; one not in here is asked of the archive.
   */
  readonly archived = new Set<string>();
  /** What the model holds besides its transcript (applied edits, rebuilds): what a release must replay. */
  replay: ReplayLog;
  /** File offset just past the last transcript line applied (tailed sessions). */
  tailOffset: number | undefined;
  /**
   * File offset just past the last line read into the session manager's run queue (applied or
   * still waiting for its turn); undefined when nothing was queued since the last rewrite.
   */
  queuedOffset: number | undefined;
  /**
   * Set while the model is released from memory (memory budget): the transcript offset it is
   * rebuilt up to (lines read and dropped with it included), its headroom then (for status), and
   * the offset the model itself had been read to. Rebuilt from the transcript on demand. Also set
   * (`fromKeptSteps`, no headroom) for a session opened with kept model steps, waiting to be
   * rebuilt with them (`replayFrom`).
   */
  released: { readonly offset: number; readonly headroom: HeadroomSnapshot | undefined; readonly modelOffset: number; readonly fromKeptSteps?: true } | undefined;
  /**
   * Opened with kept model steps (after a restart, or a finished session resumed): the transcript
   * offset of the last one. The session waits released, its lines pending, until they reach it,
   * then is rebuilt with the steps replayed (SessionManager.keptSteps).
   */
  replayFrom: number | undefined;
  /** Plans stored since the session's plans were last pruned (SessionManager.prunePlans). */
  plansSincePrune = 0;
  /**
   * The texts of its last stored plan (summaries, survival facts) with their secrets redacted,
   * by text: what the plan log stores (SessionManager.storedTexts). A re-plan's summaries are
   * mostly the last plan's, so they are not scanned again.
   */
  storedTexts: ReadonlyMap<string, string> = new Map();
  /** Appends that arrived while released, applied once the model is rebuilt. */
  readonly pending: { readonly events: readonly TranscriptEvent[]; readonly toOffset: number | undefined }[] = [];
  /** The rebuild under way, if any. */
  restoring: Promise<void> | undefined;
  /**
   * Set while lines of the transcript read are not in the model because applying them failed
   * (SessionManager.applyFailed): the session is released until a rebuild from the transcript
   * succeeds; daemon.status shows it.
   */
  failure: { readonly code: string; readonly message: string; readonly since: number } | undefined;
  /** Set while the plan log cannot be read for a rebuild: the next retry's delay and its timer (owned by the session manager). */
  rebuildRetry: { delayMs: number; timer: NodeJS.Timeout | undefined } | undefined;
  /**
   * The plan of this session being made (not a dry run), if any: a manual plan waits for it, so
   * one session never has two at once (owned by the session manager).
   */
  planInFlight: Promise<unknown> | undefined;
  /** The timer of a throttled plan (owned by the session manager). */
  planTimer: NodeJS.Timeout | undefined;
  /** For a conversation through the proxy: the agent's own session id, and how to compact it now. */
  proxied: ProxiedLink | undefined;
  /**
   * The same agent session seen the other way: a tailed transcript and a conversation through
   * the proxy of the same agent session id. Once seen, kept (harvest takes one of the two).
   */
  linkedSession: string | undefined;

  constructor(
    readonly sessionId: string,
    /** The transcript file; for a proxied conversation, a label naming the proxy and API. */
    readonly file: string,
    /** Transcript format, or the provider API of a proxied conversation. */
    readonly format: TranscriptFormat | ProviderFormatName,
    public model: SessionModel,
    now: number,
    /** Where the model comes from: a tailed transcript, or requests through the proxy (which plans for it itself). */
    readonly source: 'transcript' | 'proxy' = 'transcript',
    replaySink?: StepSink,
  ) {
    this.life = new SessionLifecycle(now);
    this.replay = new ReplayLog(replaySink);
  }

  /** Whether harvest reads this session from its transcript (a tailed session not fed over the socket). */
  get harvestsFromTranscript(): boolean {
    return this.source === 'transcript' && this.fed === undefined;
  }

  /**
   * How far the transcript was read (appends waiting for a released model included): a
   * harvest reads the file up to here, the same lines the model was given.
   */
  harvestEndOffset(): number {
    return this.queuedOffset ?? this.pending.at(-1)?.toOffset ?? this.tailOffset ?? 0;
  }

  /** The headroom now, or as it was when the model was released. */
  headroom(): HeadroomSnapshot {
    return this.released?.headroom ?? this.model.headroom();
  }

  get ended(): boolean {
    return this.life.ended;
  }

  get lastActivityAt(): number {
    return this.life.lastActivityAt;
  }
}
