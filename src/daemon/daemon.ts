import { existsSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { Tailer } from '../ingest/index.js';
import { createTokenCounter, type TokenCounter } from '../model/tokens.js';
import { createSummarizer, type Summarizer } from '../compact/index.js';
import { RpcServer } from '../ipc/index.js';
import { Archive, DerivedData, HeadroomLog, ModelSteps, PlanLog, TokenCounts, openDb, secureStateDir, type Db } from '../store/index.js';
import { SqliteTokenCountCache } from './token-cache.js';
import { SqliteDerivedDataCache } from './derived-cache.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { VERSION } from '../version.js';
import type { DaemonOptions } from './config.js';
import { stateDbPath } from '../store/paths.js';
import { startCheckpointer, type Checkpointer } from '../store/checkpointer.js';
import { SessionManager } from './sessions.js';
import { yieldToEventLoop } from './loop-budget.js';
import { redactMessages, type LoadedSession } from '../harvest/index.js';
import type { LiveSession } from './live-session.js';
import { buildHandlers } from './handlers.js';
import type { DaemonApi, DaemonStatus, LoadStatus } from './api.js';
import { createNotifier, type Notifier } from './sdnotify.js';
import { Subscriptions } from './subscriptions.js';
import { listenFdsFromEnv, pickListenFd } from './activation.js';
import { WarmService } from './warm-service.js';
import { ProxyServer } from '../proxy/index.js';
import { IdleCollector } from '../util/gc.js';

export type DaemonState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

export interface DaemonDeps {
  readonly logger: Logger;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly now?: () => number;
  readonly tokenCounter?: TokenCounter;
}

/**
 * The compacting collection after sessions leave memory runs only once the tailed models still
 * in memory hold at most this many tokens (about 15 MiB of heap): its pause and its transient
 * memory grow with what is live, and while a harvest round is still freeing sessions it would
 * move most of what the next seconds free anyway.
 */
export const COLLECT_BELOW_HELD_TOKENS = 500_000;

/**
 * The wiring of contextd: tailer → session models → compaction loop → socket pushes, and
 * finished sessions → harvest → warm templates. Lifecycle: start() once, stop() idempotent.
 */
export class Daemon {
  private stateValue: DaemonState = 'new';
  private options: DaemonOptions;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly env: Readonly<Record<string, string | undefined>>;
  private readonly startedAt: number;
  private db: Db | undefined;
  private checkpointer: Checkpointer | undefined;
  private tokenCache: SqliteTokenCountCache | undefined;
  private derivedCache: SqliteDerivedDataCache | undefined;
  private tailer: Tailer | undefined;
  private server: RpcServer | undefined;
  private sessions: SessionManager | undefined;
  private warm: WarmService | undefined;
  private proxy: ProxyServer | undefined;
  private notifier: Notifier | undefined;
  private watchdogTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  /** Harvests under way (awaited before the database closes). */
  private readonly harvests = new Set<Promise<unknown>>();
  /** The round of idle harvests under way (one session at a time), if any. */
  private idleHarvests: Promise<void> | undefined;
  /**
   * One full garbage collection after sessions leave memory, so an idle daemon gives the heap
   * back: once the models still held are few (COLLECT_BELOW_HELD_TOKENS).
   */
  private readonly collector = new IdleCollector({ worthIt: () => (this.sessions?.heldTokens() ?? 0) <= COLLECT_BELOW_HELD_TOKENS });
  /** Event-loop delay while running (daemon.status `load`). */
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 5 });
  /** connection id → session ids it subscribed to. */
  private readonly subscriptions = new Subscriptions();

  constructor(options: DaemonOptions, private readonly deps: DaemonDeps) {
    this.options = options;
    this.log = deps.logger.child({ component: 'daemon' });
    this.now = deps.now ?? Date.now;
    this.env = deps.env ?? process.env;
    this.startedAt = this.now();
  }

  get state(): DaemonState {
    return this.stateValue;
  }

  get socketPath(): string {
    return this.options.socketPath;
  }

  /** Open the store, listen on the socket, start watching; resolves once ready. */
  async start(): Promise<void> {
    if (this.stateValue !== 'new') throw new ContextdError(ErrorCode.LIFECYCLE, `daemon cannot start from state ${this.stateValue}`);
    this.stateValue = 'starting';
    try {
      await this.startParts();
    } catch (err) {
      // Whatever did open (socket, db, watcher) must not keep a half-started process alive.
      await this.stop('start failed');
      throw err;
    }
  }

  private async startParts(): Promise<void> {
    const o = this.options;
    const dbPath = stateDbPath(o.stateDir);
    const secured = secureStateDir(o.stateDir);
    if (secured.previousMode !== undefined) this.log.warn({ stateDir: o.stateDir, previousMode: secured.previousMode.toString(8), mode: '700' }, 'state folder was readable by others: made private');
    this.db = openDb(dbPath);
    // WAL checkpoints (a copy into the database file and an fsync) on a worker, not in a commit
    // on the event loop: without it, the commit that crossed 1000 WAL pages held the loop for
    // several ms mid-burst, tens on a busy disk.
    try {
      this.checkpointer = startCheckpointer(this.db, {
        path: dbPath,
        onFailure: (err) => this.log.warn({ err: describeError(err) }, 'WAL checkpoint worker failed: SQLite checkpoints in its commits again'),
      });
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'WAL checkpoint worker not started: SQLite checkpoints in its commits');
    }
    // Counts persist by content hash: a restart on existing transcripts reads them back.
    this.tokenCache = new SqliteTokenCountCache(new TokenCounts(this.db), this.deps.logger);
    // So do the term stats and fingerprints a plan derives: a cold plan after a restart reads them.
    this.derivedCache = new SqliteDerivedDataCache(new DerivedData(this.db), this.deps.logger);
    const tokenCounter = this.deps.tokenCounter ?? createTokenCounter(o.encoding);
    const summarizer = createSummarizer(o.summarizer, { logger: this.deps.logger });
    const plans = new PlanLog(this.db);
    this.sessions = new SessionManager(o, {
      logger: this.deps.logger,
      tokenCounter,
      tokenCache: this.tokenCache,
      derivedCache: this.derivedCache,
      summarizer,
      headroomLog: new HeadroomLog(this.db),
      archive: new Archive(this.db),
      plans,
      modelSteps: new ModelSteps(this.db),
      now: this.now,
      hasSubscribers: (sessionId) => this.subscriberCount(sessionId) > 0,
      ...(o.archive.redactSecrets ? { archiveFilter: redactMessages } : {}),
      memoryFreed: () => this.collector.request(),
      tailedFile: (file) => this.tailer?.readIdentityOf(file),
    });
    this.warm = new WarmService(this.db, {
      logger: this.deps.logger,
      tokenCounter,
      now: this.now,
      stateDir: o.stateDir,
      snapshotDelayMs: o.warmSnapshotDelayMs,
      tailedFile: (file) => this.tailer?.readIdentityOf(file),
      ...(o.maxLineBytes !== undefined ? { maxLineBytes: o.maxLineBytes } : {}),
    });
    this.sessions.on('plan', (s, plan) => {
      const pushedTo = this.pushTo(s.sessionId, 'compaction.proposed', plan);
      if (pushedTo === 0) this.log.info({ sessionId: s.sessionId, planId: plan.planId }, 'no client subscribed: plan is advisory (logged and stored, not pushed)');
    });
    // A fed session released from memory: harvested from the messages it held, its only copy.
    this.sessions.on('fedReleased', (s, history) => {
      this.trackHarvest(s, 'unknown', undefined, history).then(
        (r) => this.log.info({ sessionId: s.sessionId, harvested: r.harvested, reason: 'released from memory' }, 'fed session harvested at its release'),
        (err: unknown) => this.log.error({ sessionId: s.sessionId, err: describeError(err) }, 'harvest of a released fed session failed'),
      );
    });
    this.sessions.on('zone', (s, zone, previous) => {
      const h = s.model.headroom();
      this.pushTo(s.sessionId, 'session.headroom', { sessionId: s.sessionId, zone, previousZone: previous ?? null, ...h });
    });

    const activation = listenFdsFromEnv(this.env as Record<string, string | undefined>, process.pid, {
      onProblem: (problem) => this.log.warn({ problem }, 'ignoring socket activation variables'),
    });
    const fd = activation ? pickListenFd(activation, 'contextd') : undefined;
    this.notifier = createNotifier({ env: this.env, logger: this.deps.logger });
    this.server = new RpcServer({
      ...(fd !== undefined ? { fd } : { socketPath: o.socketPath }),
      ...(o.socketGroup !== undefined ? { group: o.socketGroup } : {}),
      maxLineBytes: o.maxMessageBytes,
      maxClients: o.maxClients,
      idleTimeoutMs: o.clientIdleTimeoutMs,
      partialLineTimeoutMs: o.partialLineTimeoutMs,
      drainTimeoutMs: o.shutdownTimeoutMs,
      keepIdle: (connId) => this.subscriptions.follows(connId),
      handlers: buildHandlers(this.api()),
      logger: this.deps.logger,
    });
    this.server.on('disconnect', (conn) => {
      this.subscriptions.dropConnection(conn.id);
      this.warm?.forgetConnection(conn.id);
    });
    await this.server.listen();
    // Only now: a second daemon on the same state fails to listen above, and must not end the
    // plans of the one running, nor drop the derived data of its version.
    this.expirePlansOfLastRun(plans);
    this.derivedCache.dropOtherVersions();
    if (this.stopping) return;
    if (o.proxy) {
      this.proxy = this.startProxyParts(o.proxy, tokenCounter, summarizer);
      await this.proxy.listen();
      if (this.stopping) return;
    }

    for (const p of o.watch) {
      if (!existsSync(p)) this.log.warn({ path: resolve(p) }, 'watch path does not exist yet: watching for it to appear');
    }
    this.tailer = new Tailer({
      paths: o.watch.map((p) => resolve(p)),
      maxLineBytes: o.maxLineBytes,
      followSymlinks: o.followSymlinks,
      formatOverrides: o.formats,
      logger: this.deps.logger,
      // Read no further while the models have a backlog to apply (first scan of large transcripts),
      // and, once running, no further of a session with lines waiting or an overdue plan (SessionManager.room).
      gate: (file) => this.sessions?.room(file),
    });
    this.wireTailer(this.tailer);
    // The first scan re-reads every live transcript: give systemd more time if it is long.
    const extend = setInterval(() => void this.notifier?.extendTimeout(30_000), 10_000);
    try {
      await this.tailer.start();
      // Ready means every transcript read is in its model (the tailer's batches wait their turn).
      await this.sessions?.settled();
      this.sessions?.steadyState();
      // ...and every session read with kept model steps (edits its agent applied) has them replayed.
      await this.sessions?.replayedAtStart();
    } finally {
      clearInterval(extend);
    }
    if (this.stopping) return; // SIGTERM arrived during the first scan: stop() owns the rest
    // The first warm.bootstrap runs cold (JIT, statements, the tokenizer's tables, which load on
    // first use): ~0.4 s, longer than a hook waits. Pay it before reporting ready, so an agent's
    // first prompt after a start finds a warm daemon (it used to be the hooks' p99: 450-600 ms).
    this.warm?.warmUp();
    // The scan read every transcript into buffers that are all dead now: give them back before
    // reporting ready, rather than whenever V8 next looks (seconds later, or the next busy spell).
    const gcStarted = performance.now();
    if (this.collector.collectNow()) this.log.debug({ ms: Math.round(performance.now() - gcStarted) }, 'memory of the first scan collected');

    await this.notifier.ready(`watching ${o.watch.length} path(s), socket ${fd !== undefined ? 'fd 3' : o.socketPath}`);
    const wd = this.notifier.watchdogIntervalMs;
    if (wd !== undefined) {
      this.watchdogTimer = setInterval(() => void this.notifier?.watchdog(), wd);
      this.watchdogTimer.unref();
    }
    // Idle sessions are looked for a few times per idle timeout (harvest) and per idle release
    // (memory), and fed sessions whose clients are gone a few times per releaseAfterMs.
    const idleCheckMs = Math.min(o.idleTimeoutMs, o.memory.idleReleaseMs > 0 ? o.memory.idleReleaseMs : Number.POSITIVE_INFINITY, o.memory.releaseAfterMs);
    this.idleTimer = setInterval(() => {
      this.harvestIdle();
      this.sessions?.releaseIdle();
    }, Math.min(60_000, Math.max(1_000, Math.floor(idleCheckMs / 4))));
    this.idleTimer.unref();
    if (this.stopping) return;
    this.stateValue = 'running';
    this.loopDelay.enable();
    this.log.info({ version: VERSION, socket: fd !== undefined ? 'fd:3' : o.socketPath, watch: o.watch, state: dbPath, reserveRatio: o.reserveRatio, softWatermark: o.softWatermark, budgetTokens: o.budgetTokens ?? null }, 'contextd running');
  }

  /** Drain in-flight plans, flush SQLite, close and remove the socket. Idempotent. */
  stop(reason = 'stop'): Promise<void> {
    this.stopping ??= this.doStop(reason);
    return this.stopping;
  }

  private async doStop(reason: string): Promise<void> {
    const o = this.options;
    this.stateValue = 'stopping';
    this.log.info({ reason }, 'contextd stopping');
    await this.notifier?.stopping();
    if (this.watchdogTimer) clearInterval(this.watchdogTimer);
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.loopDelay.disable();
    this.collector.cancel();
    // Lines read but not applied are dropped and a read waiting for room goes on: closing the
    // tailer never waits for the backlog (harvests read transcripts themselves).
    this.sessions?.stopIngest();
    await this.tailer?.close();
    // No new requests while draining: close the socket first, then finish what is in flight.
    await this.proxy?.close();
    await this.server?.close();
    await this.sessions?.drain();
    // Harvests still running (idle ones; session.end ones were awaited with their replies): bounded.
    if (this.harvests.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), o.shutdownTimeoutMs)));
      const outcome = await Promise.race([Promise.allSettled([...this.harvests]).then(() => 'done' as const), timedOut]);
      clearTimeout(timer);
      if (outcome === 'timeout') this.log.warn({ harvests: this.harvests.size, shutdownTimeoutMs: o.shutdownTimeoutMs }, 'shutdown: harvests still running were abandoned');
    }
    // The warm snapshot holds every harvest before the store closes.
    this.warm?.close();
    this.tokenCache?.close();
    this.derivedCache?.close();
    await this.checkpointer?.close();
    if (this.db?.open) {
      try {
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      } catch (err) {
        this.log.warn({ err: describeError(err) }, 'WAL checkpoint failed at shutdown');
      }
      this.db.close();
    }
    this.stateValue = 'stopped';
    this.log.info({ reason }, 'contextd stopped');
  }

  /** Apply new options (SIGHUP). Watch list, socket and state dir need a restart. */
  reload(options: DaemonOptions): void {
    void this.notifier?.reloading();
    const needsRestart: (keyof DaemonOptions)[] = ['socketPath', 'stateDir', 'watch', 'maxLineBytes', 'maxMessageBytes', 'socketGroup', 'summarizer', 'encoding', 'formats', 'followSymlinks', 'archive', 'proxy', 'warmSnapshotDelayMs'];
    const restartNeeded = needsRestart.filter((k) => JSON.stringify(options[k]) !== JSON.stringify(this.options[k]));
    this.options = { ...options, ...Object.fromEntries(restartNeeded.map((k) => [k, this.options[k]])) } as DaemonOptions;
    this.deps.logger.level = options.logLevel;
    this.sessions?.reconfigure(this.options);
    this.server?.setLimits({ maxClients: this.options.maxClients, idleTimeoutMs: this.options.clientIdleTimeoutMs, partialLineTimeoutMs: this.options.partialLineTimeoutMs });
    void this.notifier?.ready();
    if (restartNeeded.length > 0) this.log.warn({ restartNeeded }, 'some changed settings take effect only after a restart');
    this.log.info({ restartNeeded, reserveRatio: options.reserveRatio, softWatermark: options.softWatermark, budgetTokens: options.budgetTokens ?? null, logLevel: options.logLevel }, 'configuration reloaded');
  }

  /** The proxy, its conversations listed and logged by the session manager like tailed sessions. */
  private startProxyParts(options: NonNullable<DaemonOptions['proxy']>, tokenCounter: TokenCounter, summarizer: Summarizer): ProxyServer {
    const sessions = this.sessions as SessionManager;
    const proxy = new ProxyServer(options, {
      logger: this.deps.logger,
      tokenCounter,
      summarizer,
      archive: new Archive(this.db as Db),
      ...(this.options.archive.redactSecrets ? { archiveFilter: redactMessages } : {}),
      now: this.now,
    });
    proxy.on('opened', (c) => sessions.attachProxied(c.id, `proxy:${c.format}`, c.format, c.model, { agentSessionId: c.agentSessionId, compact: (target) => proxy.compact(c.id, target) }));
    proxy.on('request', (c, prepared) => sessions.proxiedChanged(c.id, c.model, prepared.plan, prepared.fresh));
    proxy.on('compacted', (c, plan) => sessions.proxiedChanged(c.id, c.model, plan));
    proxy.on('closed', (c, why) => this.proxiedClosed(c.id, why));
    return proxy;
  }

  /**
   * The proxy forgot a conversation (idle, or evicted): harvest it from the messages it modelled,
   * unless it is linked to a tailed transcript (harvested on its own) or was harvested already
   * (session.end), then forget it here too.
   */
  private proxiedClosed(sessionId: string, why: string): void {
    const sessions = this.sessions;
    const s = sessions?.get(sessionId);
    if (!sessions || !s) return;
    if (s.linkedSession === undefined && !this.stopping && sessions.endSession(s)) {
      // the harvest reads the history at once: the session can go right after
      this.trackHarvest(s, 'unknown').then(
        (r) => this.log.info({ sessionId, harvested: r.harvested, reason: why }, 'proxied conversation harvested'),
        (err: unknown) => this.log.error({ sessionId, err: describeError(err) }, 'proxied conversation harvest failed'),
      );
    }
    sessions.removeSession(sessionId, `proxied conversation ${why}`);
  }

  private wireTailer(tailer: Tailer): void {
    const sessions = this.sessions as SessionManager;
    tailer.on('events', (e) => {
      try {
        sessions.enqueue(e.file, e.sessionId, e.format, e.events, e.toOffset, e.toOffset - e.fromOffset);
      } catch (err) {
        // The tailer has read past these lines: the session's model is rebuilt from its transcript up to them.
        try {
          sessions.handOffFailed(e.file, e.sessionId, e.toOffset, err);
        } catch (again) {
          this.log.error({ sessionId: e.sessionId, file: e.file, code: ErrorCode.INGEST_FAILED, err: describeError(err), again: describeError(again) }, 'transcript lines read but not taken, nor the session marked for a rebuild: they reach its model when the transcript is read again (a rewrite, a restart)');
        }
      }
    });
    tailer.on('reset', (e) => sessions.resetSession(e.file, e.sessionId, e.reason));
    tailer.on('removed', (e) => {
      // A session fed over the socket lives on without its transcript.
      if (!sessions.get(e.sessionId)?.fed) sessions.removeSession(e.sessionId);
    });
    // The tailer logs its own errors and skipped lines (once, rate-limited per file): no second line here.
    tailer.on('error', () => undefined);
  }

  /**
   * Plans open when the last run stopped can no longer be acked: marked expired (a full scan of
   * the plan rows, ~45 ms at a million). A failure is logged; the start goes on.
   */
  private expirePlansOfLastRun(plans: PlanLog): void {
    try {
      const expired = plans.expireOpen('contextd restarted: the plan was open when it stopped');
      if (expired > 0) this.log.info({ expired }, 'plans open when contextd last stopped marked expired');
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'plans open at the last stop not marked expired; continuing');
    }
  }

  /** Connections subscribed to a session. */
  private subscriberCount(sessionId: string): number {
    return this.subscriptions.connectionsOf(sessionId).size;
  }

  /** Push to every connection subscribed to the session (encoded once); how many it reached. */
  private pushTo(sessionId: string, method: string, params: unknown): number {
    const conns = this.subscriptions.connectionsOf(sessionId);
    if (conns.size === 0 || !this.server) return 0;
    return this.server.notifyAll([...conns], method, params);
  }

  /**
   * Harvest the sessions found idle, one at a time with a yield to the event loop between: a
   * harvest decodes the transcript and writes templates in synchronous steps, and 50 sessions
   * going idle together, harvested at once, held the loop for over a second (bench load), and
   * held 50 decoded transcripts in memory at the same time (+90 MiB heap and external).
   * A round still under way when the timer fires again is left to finish; sessions that went
   * idle meanwhile stay due for the next round.
   */
  private harvestIdle(): void {
    const sessions = this.sessions;
    if (!sessions || this.stopping || this.idleHarvests) return;
    // proxied conversations are harvested when the proxy forgets them (proxiedClosed)
    const due = sessions.idleSessions().filter((s) => s.source !== 'proxy' && sessions.endSession(s));
    if (due.length === 0) return;
    this.idleHarvests = this.harvestInTurn(sessions, due).finally(() => {
      this.idleHarvests = undefined;
    });
  }

  private async harvestInTurn(sessions: SessionManager, due: readonly LiveSession[]): Promise<void> {
    for (const s of due) {
      await yieldToEventLoop();
      if (this.stopping) return; // not harvested: it is read again, and found idle again, after a restart
      // Every due session was marked ended when the round began: one that resumed since (a new
      // message), or was forgotten (or forgotten and opened anew), is not harvested now.
      if (!s.ended || sessions.get(s.sessionId) !== s) {
        this.log.debug({ sessionId: s.sessionId }, 'session active again before its idle harvest: not harvested in this round');
        continue;
      }
      try {
        // harvest reads the transcript itself: a session released from memory stays released
        const r = await this.trackHarvest(s, 'unknown');
        this.log.info({ sessionId: s.sessionId, harvested: r.harvested, reason: 'idle' }, 'idle session harvested');
        // Free its model unless a client still follows it: the file stays watched and is read
        // again from 0 if the session resumes (a session fed over the socket is fed again).
        if (s.ended && sessions.get(s.sessionId) === s && this.subscriberCount(s.sessionId) === 0 && !this.stopping && (s.fed !== undefined || this.tailer?.release(s.file))) sessions.removeSession(s.sessionId, 'finished (idle) and harvested');
      } catch (err) {
        this.log.error({ sessionId: s.sessionId, err: describeError(err) }, 'idle harvest failed');
      }
    }
  }

  /** Run a harvest the shutdown waits for (the database never closes under one). */
  private trackHarvest(s: LiveSession, outcome: 'success' | 'failure' | 'unknown', connectionId?: string, history?: LoadedSession): Promise<{ harvested: number }> {
    const warm = this.warm;
    if (!warm || this.db?.open !== true) return Promise.reject(new ContextdError(ErrorCode.LIFECYCLE, 'contextd is shutting down: the session was not harvested', { sessionId: s.sessionId }));
    const work = warm.harvest(s, outcome, connectionId, history);
    this.harvests.add(work);
    void work.then(
      () => this.harvests.delete(work),
      () => this.harvests.delete(work),
    );
    return work;
  }

  /** What the socket handlers may do; the handlers never see the wiring itself. */
  private api(): DaemonApi {
    return {
      sessions: () => this.sessions as SessionManager,
      warm: () => this.warm as WarmService,
      archive: () => new Archive(this.db as Db),
      subscribe: (connId, session) => {
        this.subscriptions.add(connId, session.sessionId);
        // After the subscribe reply is written: the current plan, or a fresh one, at once.
        setImmediate(() => {
          if (this.stopping || !this.subscriptions.has(connId, session.sessionId)) return;
          void this.sessions?.subscribed(session).then(
            (current) => {
              if (current && !this.stopping && this.subscriptions.has(connId, session.sessionId)) this.server?.notify(connId, 'compaction.proposed', current);
            },
            (err: unknown) => this.log.warn({ sessionId: session.sessionId, err: describeError(err) }, 'subscribed session not rebuilt: its plan follows its next rebuild'),
          );
        });
      },
      harvest: (session, outcome, connId) => {
        // one harvest per agent session: a proxied conversation linked to a transcript is harvested from it
        const target = this.sessions?.harvestTarget(session);
        if (!target) return Promise.resolve({ harvested: 0 });
        if (target !== session) this.sessions?.endSession(target);
        // harvest reads a tailed session's transcript itself: one released from memory is not rebuilt for it
        return this.trackHarvest(target, outcome, connId);
      },
      subscribedSessions: (connId) => this.subscriptions.sessionsOf(connId),
      status: () => this.status(),
      isolated: this.options.socketGroup !== undefined,
    };
  }

  /** The proxy's address and totals: tokens saved per request, cache-breaking rewrites per 100 requests. */
  private proxyStatus(): NonNullable<DaemonStatus['proxy']> {
    const p = this.proxy as ProxyServer;
    const t = p.totals;
    const a = p.state === 'listening' ? p.address() : { host: this.options.proxy?.host ?? '', port: this.options.proxy?.port ?? 0 };
    return {
      listen: `${a.host}:${a.port}`,
      requests: t.requests,
      modelled: t.modelled,
      plansApplied: t.plansApplied,
      tokensSavedPerRequest: t.modelled > 0 ? Math.round((t.tokensIn - t.tokensOut) / t.modelled) : 0,
      cacheBreaksPer100: t.modelled > 0 ? Math.round((t.cacheBreaks * 10_000) / t.modelled) / 100 : 0,
      upstreamErrors: t.upstreamErrors,
    };
  }

  /** Sessions with headroom, version, uptime (daemon.status). */
  status(): DaemonStatus {
    const sessions = this.sessions?.all() ?? [];
    return {
      server: { name: 'contextd', version: VERSION },
      pid: process.pid,
      uptimeSeconds: Math.round((this.now() - this.startedAt) / 1000),
      socket: this.options.socketPath,
      watch: [...this.options.watch],
      reserveRatio: this.options.reserveRatio,
      softWatermark: this.options.softWatermark,
      heldTokens: this.sessions?.heldTokens() ?? 0,
      sessions: sessions.map((s) => {
        const h = s.headroom();
        return {
          sessionId: s.sessionId,
          file: s.file,
          format: s.format,
          tokens: h.tokens,
          total: h.total,
          headroom: h.headroom,
          sections: h.sections,
          reportedTokens: h.reportedTokens ?? null,
          lastActivityAt: s.lastActivityAt,
          openPlans: this.sessions?.openPlanCount(s.sessionId) ?? 0,
          lastEdit: s.life.lastEdit ?? null,
          subscribers: this.subscriberCount(s.sessionId),
          source: s.source,
          linkedSession: s.linkedSession ?? null,
          inMemory: s.released === undefined,
          failure: s.failure && s.released ? { code: s.failure.code, message: s.failure.message, since: s.failure.since } : null,
          fed: s.fed !== undefined,
        };
      }),
      load: this.loadStatus(),
      ...(this.proxy && this.options.proxy ? { proxy: this.proxyStatus() } : {}),
    };
  }

  /** Memory, backlog and event-loop delay (daemon.status `load`). */
  private loadStatus(): LoadStatus {
    const m = process.memoryUsage();
    const b = this.sessions?.backlog() ?? { queuedBytes: 0, queuedSessions: 0, sessionsInMemory: 0, fedSessionsInMemory: 0, plansInFlight: 0 };
    const d = this.loopDelay;
    const ms = (ns: number): number => Math.round(ns / 1e4) / 100;
    return {
      rssBytes: m.rss,
      heapUsedBytes: m.heapUsed,
      heapTotalBytes: m.heapTotal,
      externalBytes: m.external,
      arrayBuffersBytes: m.arrayBuffers,
      ...b,
      eventLoopDelayMs: d.count > 0 ? { p50: ms(d.percentile(50)), p99: ms(d.percentile(99)), max: ms(d.max) } : { p50: 0, p99: 0, max: 0 },
    };
  }
}
