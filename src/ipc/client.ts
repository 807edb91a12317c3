/**
 * The TypeScript client for agents (`contextd/client`). Connects to the daemon's socket,
 * announces itself with `initialize`, exposes one typed method per protocol method, emits the
 * daemon's notifications as events, and reconnects with exponential backoff (re-sending
 * `initialize` and re-subscribing) when the daemon restarts.
 *
 * Requests made while disconnected fail at once with DAEMON_UNREACHABLE rather than queueing;
 * listen for `connect` to know when to retry. Requests pending at a disconnect are rejected.
 */
import { EventEmitter } from 'node:events';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { ClientTransport, connectSocket, unreachable } from './client-transport.js';
import { RpcError, RpcErrorCode } from './errors.js';
import { METHODS, NOTIFICATIONS, type MethodName, type ParamsInput, type SessionOutcome } from './protocol.js';
import { findSocketPath } from './paths.js';
import type { HeadroomNotification, InitializeResult, ResultOf, SubscribeResult, WirePlan } from './results.js';

export { RpcError, RpcErrorCode, isRpcError } from './errors.js';
export { METHODS, NOTIFICATIONS, PROTOCOL_VERSION } from './protocol.js';
export type * from './results.js';
export { defaultSocketPath, findSocketPath } from './paths.js';

export interface ContextdClientOptions {
  /** Daemon socket (default: the first existing of `candidateSocketPaths()`). */
  readonly socketPath?: string;
  /** Reconnect after the daemon goes away (default true). */
  readonly reconnect?: boolean;
  /** Reconnect delays: start at `initialMs`, double up to `maxMs` (defaults 100 / 5000), ±20% jitter. */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** Reject a request not answered within this many ms (default 30000; 0 disables). */
  readonly requestTimeoutMs?: number;
  /** Who we are, sent with `initialize`. */
  readonly clientInfo: { readonly name: string; readonly version: string };
  /** Capabilities sent with `initialize` (e.g. `{applyEdits: true}`). */
  readonly capabilities?: { readonly applyEdits?: boolean; readonly [k: string]: unknown };
  /**
   * After a reconnect, how many times to retry re-subscribing a session the daemon does not
   * know yet (it may still be reading transcripts), with the same backoff (default 20).
   */
  readonly restoreAttempts?: number;
  /** Largest line accepted from the daemon (default 64 MiB). */
  readonly maxLineBytes?: number;
  readonly logger?: Logger;
}

export type ClientState = 'new' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface ContextdClientEvents {
  /** A compaction plan for a subscribed session: apply what you can, then `ack`. */
  'compaction.proposed': [WirePlan];
  /** Headroom of a subscribed session crossed a watermark. */
  'session.headroom': [HeadroomNotification];
  /** Every notification, known or not. */
  notification: [method: string, params: unknown];
  /** Connected and initialized (again, after a reconnect: subscriptions restored). */
  connect: [];
  /** The connection dropped; pending requests were rejected. */
  disconnect: [];
  /** A reconnect attempt is scheduled in `delayMs` (attempt counts from 1). */
  reconnecting: [attempt: number, delayMs: number];
  /** Non-fatal trouble (a failed reconnect attempt, a lost subscription, a bad line). */
  error: [Error];
}

interface Subscription {
  readonly params: ParamsInput<'session.subscribe'>;
  sessionId: string | undefined;
}

/** A connection to the contextd daemon. */
export class ContextdClient extends EventEmitter<ContextdClientEvents> {
  readonly socketPath: string;
  private readonly opts: Required<Pick<ContextdClientOptions, 'reconnect' | 'requestTimeoutMs' | 'maxLineBytes'>> & ContextdClientOptions;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly log: Logger;
  private transport: ClientTransport | undefined;
  private _state: ClientState = 'new';
  private readonly subscriptions = new Map<string, Subscription>();
  private attempt = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private _server: InitializeResult | undefined;
  private restoreTimer: NodeJS.Timeout | undefined;
  private pendingRestore: Subscription[] = [];
  private readonly restoreAttempts: number;

  constructor(options: ContextdClientOptions) {
    super();
    this.opts = { reconnect: true, requestTimeoutMs: 30_000, maxLineBytes: 64 * 1024 * 1024, ...options };
    this.socketPath = options.socketPath ?? findSocketPath();
    this.backoffInitialMs = options.backoff?.initialMs ?? 100;
    this.backoffMaxMs = options.backoff?.maxMs ?? 5000;
    this.restoreAttempts = options.restoreAttempts ?? 20;
    this.log = (options.logger ?? silentLogger()).child({ component: 'ipc-client' });
  }

  get state(): ClientState {
    return this._state;
  }

  /** What the daemon said in reply to the last `initialize`. */
  get server(): InitializeResult | undefined {
    return this._server;
  }

  /** Connect and initialize. Rejects with DAEMON_UNREACHABLE when the socket cannot be reached. */
  async connect(): Promise<void> {
    if (this._state !== 'new') {
      throw new ContextdError(ErrorCode.LIFECYCLE, `client cannot connect: it is ${this._state}`, { state: this._state });
    }
    this._state = 'connecting';
    try {
      await this.open();
    } catch (err) {
      if (this._state === 'connecting') this._state = 'new';
      throw err;
    }
    this._state = 'connected';
    this.scheduleRestore(this.takePendingRestore(), 0);
    this.emit('connect');
  }

  private takePendingRestore(): Subscription[] {
    const out = this.pendingRestore;
    this.pendingRestore = [];
    return out;
  }

  /** Open the socket, send initialize, restore subscriptions. */
  private async open(): Promise<void> {
    const socket = await connectSocket(this.socketPath);
    if (this._state === 'closed') {
      socket.destroy();
      throw unreachable('client closed while connecting', { reason: 'closed' });
    }
    const transport = new ClientTransport(
      socket,
      { maxLineBytes: this.opts.maxLineBytes, requestTimeoutMs: this.opts.requestTimeoutMs, socketPath: this.socketPath },
      {
        onNotification: (method, params) => this.onNotification(method, params),
        onError: (err) => this.reportError(err),
        onClose: () => this.onClose(transport),
      },
      this.log,
    );
    this.transport = transport;
    try {
      await this.initialize();
      const later: Subscription[] = [];
      for (const sub of [...this.subscriptions.values()]) if ((await this.restore(sub)) === 'retry') later.push(sub);
      this.pendingRestore = later;
    } catch (err) {
      await transport.destroy();
      throw err;
    }
  }

  /**
   * Re-subscribe once. Resolves 'retry' when the daemon does not know the session *yet* (after
   * a restart it may still be reading its transcripts), 'done' otherwise. Other refusals drop
   * the subscription with an `error` event; transport failures reject (the reconnect retries).
   */
  private async restore(sub: Subscription): Promise<'done' | 'retry'> {
    try {
      const res = await this.call<'session.subscribe'>(METHODS.subscribe, sub.params);
      sub.sessionId = res.sessionId;
      return 'done';
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.UNKNOWN_SESSION) return 'retry';
      if (err instanceof RpcError) {
        this.subscriptions.delete(JSON.stringify(sub.params));
        this.reportError(new Error(`subscription ${JSON.stringify(sub.params)} was not restored: ${err.message}`));
        return 'done';
      }
      throw err;
    }
  }

  /** Keep re-subscribing sessions the restarted daemon has not found yet, with backoff. */
  private scheduleRestore(subs: Subscription[], attempt: number): void {
    if (subs.length === 0) return;
    const transport = this.transport;
    if (attempt >= this.restoreAttempts) {
      for (const sub of subs) {
        this.subscriptions.delete(JSON.stringify(sub.params));
        this.reportError(new Error(`subscription ${JSON.stringify(sub.params)} was not restored: the daemon does not know that session`));
      }
      return;
    }
    const delay = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** attempt);
    this.restoreTimer = setTimeout(() => {
      this.restoreTimer = undefined;
      if (this._state !== 'connected' || this.transport !== transport) return; // a reconnect restores all anyway
      void (async () => {
        const left: Subscription[] = [];
        for (const sub of subs) {
          if (!this.subscriptions.has(JSON.stringify(sub.params))) continue;
          try {
            if ((await this.restore(sub)) === 'retry') left.push(sub);
          } catch {
            return; // connection lost: the reconnect takes over
          }
        }
        if (left.length < subs.length) this.log.info({ restored: subs.length - left.length }, 'subscriptions restored');
        this.scheduleRestore(left, attempt + 1);
      })();
    }, delay);
  }

  private onNotification(method: string, params: unknown): void {
    this.emit('notification', method, params);
    if (method === NOTIFICATIONS.compactionProposed) this.emit('compaction.proposed', params as WirePlan);
    else if (method === NOTIFICATIONS.headroom) this.emit('session.headroom', params as HeadroomNotification);
  }

  private onClose(transport: ClientTransport): void {
    if (this.transport !== transport) return;
    this.transport = undefined;
    if (this._state !== 'connected') return; // (re)connecting: open() reports the failure
    this.log.info({ socketPath: this.socketPath }, 'disconnected from contextd');
    this.emit('disconnect');
    if (this.opts.reconnect) {
      this._state = 'reconnecting';
      this.attempt = 0;
      this.scheduleReconnect();
    } else {
      this._state = 'closed';
    }
  }

  private scheduleReconnect(): void {
    const base = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** this.attempt);
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    this.attempt++;
    this.emit('reconnecting', this.attempt, delay);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.tryReconnect();
    }, delay);
  }

  private async tryReconnect(): Promise<void> {
    if (this._state !== 'reconnecting') return;
    try {
      await this.open();
    } catch (err) {
      if (this._state !== 'reconnecting') return;
      this.log.debug({ attempt: this.attempt, err: (err as Error).message }, 'reconnect failed');
      this.scheduleReconnect();
      return;
    }
    if (this._state !== 'reconnecting') return;
    this._state = 'connected';
    this.attempt = 0;
    this.scheduleRestore(this.takePendingRestore(), 0);
    this.log.info({ socketPath: this.socketPath, subscriptions: this.subscriptions.size }, 'reconnected to contextd');
    this.emit('connect');
  }

  private reportError(err: Error): void {
    this.log.warn({ err: err.message }, 'client error');
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  /** Send a request on the current connection, whatever the state (used during (re)connect). */
  private call<M extends MethodName>(method: M, params: unknown): Promise<ResultOf<M>>;
  private call(method: string, params: unknown): Promise<unknown>;
  private call(method: string, params: unknown): Promise<unknown> {
    const t = this.transport;
    if (!t) return Promise.reject(unreachable(`not connected to contextd at ${this.socketPath}`, { method, reason: 'disconnected' }));
    return t.call(method, params);
  }

  /** Send any request. Rejects with RpcError (daemon refused) or ContextdError DAEMON_UNREACHABLE. */
  request<M extends MethodName>(method: M, params: ParamsInput<M>): Promise<ResultOf<M>>;
  request(method: string, params?: unknown): Promise<unknown>;
  request(method: string, params: unknown = {}): Promise<unknown> {
    if (this._state !== 'connected') {
      return Promise.reject(
        unreachable(`not connected to contextd at ${this.socketPath} (client is ${this._state})`, { method, reason: this._state }),
      );
    }
    return this.call(method, params);
  }

  /** Announce this client (done by `connect`; call again only to refresh). */
  async initialize(): Promise<InitializeResult> {
    const params: ParamsInput<'initialize'> = {
      client: { ...this.opts.clientInfo },
      ...(this.opts.capabilities ? { capabilities: { ...this.opts.capabilities } } : {}),
    };
    const res = await this.call<'initialize'>(METHODS.initialize, params);
    this._server = res;
    return res;
  }

  /** Subscribe to a session's plans; restored automatically after a reconnect. */
  async subscribe(params: ParamsInput<'session.subscribe'> = {}): Promise<SubscribeResult> {
    const res = await this.request(METHODS.subscribe, params);
    // `{}` means "the most recent session" now; after a reconnect it must mean this one.
    const stable: ParamsInput<'session.subscribe'> = params.transcriptPath !== undefined ? { transcriptPath: params.transcriptPath } : { sessionId: res.sessionId };
    this.subscriptions.set(JSON.stringify(stable), { params: stable, sessionId: res.sessionId });
    return res;
  }

  headroom(sessionId: string): Promise<ResultOf<'session.headroom'>> {
    return this.request(METHODS.headroom, { sessionId });
  }

  sections(sessionId: string): Promise<ResultOf<'session.sections'>> {
    return this.request(METHODS.sections, { sessionId });
  }

  compact(sessionId: string, options: { targetHeadroom?: number; dryRun?: boolean } = {}): Promise<ResultOf<'session.compact'>> {
    return this.request(METHODS.compact, { sessionId, ...options });
  }

  /** Tell the daemon which edits of a plan were applied (all when `editIds` is omitted). */
  ack(params: ParamsInput<'compaction.ack'>): Promise<ResultOf<'compaction.ack'>> {
    return this.request(METHODS.ack, params);
  }

  recall(sessionId: string, handle: string): Promise<ResultOf<'section.recall'>> {
    return this.request(METHODS.recall, { sessionId, handle });
  }

  /** Declare the session finished (feeds harvest); its subscriptions are dropped. */
  async endSession(sessionId: string, outcome: SessionOutcome = 'unknown'): Promise<ResultOf<'session.end'>> {
    const res = await this.request(METHODS.endSession, { sessionId, outcome });
    for (const [key, sub] of this.subscriptions) if (sub.sessionId === sessionId) this.subscriptions.delete(key);
    return res;
  }

  bootstrap(params: ParamsInput<'warm.bootstrap'>): Promise<ResultOf<'warm.bootstrap'>> {
    return this.request(METHODS.bootstrap, params);
  }

  status(): Promise<ResultOf<'daemon.status'>> {
    return this.request(METHODS.status, {});
  }

  /**
   * Hand over the message list the agent is about to send (OpenAI chat form) for a session the
   * daemon does not tail; later plans index into this list. Subscribes this connection to it.
   */
  sync(params: ParamsInput<'session.sync'>): Promise<ResultOf<'session.sync'>> {
    return this.request(METHODS.sync, params);
  }

  /** Search archived originals by what they are about (SQLite FTS5, best match first). */
  archiveSearch(params: ParamsInput<'archive.search'>): Promise<ResultOf<'archive.search'>> {
    return this.request(METHODS.search, params);
  }

  /** Session ids of the subscriptions that will be restored after a reconnect. */
  subscribedSessions(): string[] {
    return [...this.subscriptions.values()].flatMap((s) => (s.sessionId ? [s.sessionId] : []));
  }

  /** Hang up for good. Idempotent: returns the same promise. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this._state = 'closed';
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    if (this.restoreTimer) clearTimeout(this.restoreTimer);
    this.restoreTimer = undefined;
    const t = this.transport;
    t?.rejectAll((method) => unreachable(`client closed before the reply to ${method}`, { method, reason: 'closed' }));
    this.closing = t ? t.destroy() : Promise.resolve();
    return this.closing;
  }
}
