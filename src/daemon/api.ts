/**
 * What the socket handlers may ask of the daemon, and the status it reports. Kept apart
 * from daemon.ts (which implements it) and handlers.ts (which uses it) so neither imports
 * the other.
 */
import type { Archive } from '../store/index.js';
import type { SessionManager } from './sessions.js';
import type { WarmService } from './warm-service.js';
import type { LiveSession } from './live-session.js';

/** What the socket handlers may ask of the daemon. */
export interface DaemonApi {
  sessions(): SessionManager;
  warm(): WarmService;
  archive(): Archive;
  /** Subscribe a connection to a session; the current plan (or a fresh one) follows at once. */
  subscribe(connectionId: string, session: LiveSession): void;
  /** Harvest a finished session (tracked: shutdown waits for it). */
  harvest(session: LiveSession, outcome: 'success' | 'failure' | 'unknown', connectionId: string): Promise<{ harvested: number }>;
  /** Sessions a connection subscribed to. */
  subscribedSessions(connectionId: string): readonly string[];
  status(): DaemonStatus;
  /**
   * Whether the socket is shared with a group (`socketGroup`): then a connection sees only the
   * sessions it subscribed to (by transcript path, or by an id it already sees).
   */
  readonly isolated: boolean;
}

/** `daemon.status` result as the daemon builds it. */
export interface DaemonStatus {
  server: { name: string; version: string };
  pid: number;
  uptimeSeconds: number;
  socket: string;
  watch: string[];
  reserveRatio: number;
  softWatermark: number;
  /** Tokens held by the in-memory models of tailed sessions and of those fed over the socket (bounded by `memory.maxSessionTokens`). */
  heldTokens: number;
  sessions: {
    sessionId: string;
    file: string;
    format: string;
    tokens: number;
    total: number;
    headroom: number;
    sections: number;
    reportedTokens: number | null;
    lastActivityAt: number;
    openPlans: number;
    lastEdit: { reason: string; at: number; planId: string } | null;
    subscribers: number;
    /** 'transcript' for a tailed session, 'proxy' for a conversation seen through the proxy. */
    source: 'transcript' | 'proxy';
    /** The same agent session seen the other way (tailed transcript ↔ proxied conversation), or null. */
    linkedSession: string | null;
    /** False while the session's model is released from memory (memory budget); figures are as of the release. */
    inMemory: boolean;
    /**
     * Set while lines read from the transcript could not be applied to the model (code
     * `INGEST_FAILED`, what failed, since when, epoch ms): the model is released and rebuilt from
     * the transcript on the next append or request, and at the idle sweep; null otherwise.
     */
    failure: { code: string; message: string; since: number } | null;
    /** Fed over the socket (`session.sync`): released, it is rebuilt by its agent's next sync, not from a transcript. */
    fed: boolean;
  }[];
  /** What the daemon holds and how far behind it is (memory budget, backpressure, `bench load --trace`). */
  load: LoadStatus;
  /** Present when the proxy runs. */
  proxy?: {
    listen: string;
    requests: number;
    modelled: number;
    plansApplied: number;
    tokensSavedPerRequest: number;
    cacheBreaksPer100: number;
    upstreamErrors: number;
  };
}

/** `daemon.status` `load`: memory, backlog and plans, as of the call. */
export interface LoadStatus {
  /** process.memoryUsage(), in bytes. */
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  arrayBuffersBytes: number;
  /** Transcript bytes read and decoded but not yet applied to their models (bounded: backpressure). */
  queuedBytes: number;
  /** Sessions with lines read and not yet applied. */
  queuedSessions: number;
  /** Tailed sessions whose model is in memory (fed ones included). */
  sessionsInMemory: number;
  /** Of those, sessions fed over the socket (`session.sync`; bounded by `memory.maxFedSessions`). */
  fedSessionsInMemory: number;
  /** Plans being made now. */
  plansInFlight: number;
  /** Event-loop delay since the daemon started (ms): how long a request may wait for its turn. */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}
