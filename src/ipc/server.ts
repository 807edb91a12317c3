/**
 * The JSON-RPC server on a Unix socket. It is handed its handlers (by the daemon) and knows
 * nothing of sessions: a handler that wants to push to a connection keeps `ctx.connectionId`
 * and later calls `notify(connectionId, ...)`.
 */
import { EventEmitter } from 'node:events';
import { promises as fsp } from 'node:fs';
import * as net from 'node:net';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { VERSION } from '../version.js';
import { encodeNotification, RpcConnection, type CloseReason, type ConnInfo } from './connection.js';
import { Dispatcher } from './dispatch.js';
import { RpcError, RpcErrorCode } from './errors.js';
import type { Handler } from './handlers.js';
import { checkSocketPathLength, resolveGroupId } from './paths.js';

export type { ConnInfo } from './connection.js';

export interface RpcServerOptions {
  /** Path of the Unix socket to create. Exactly one of `socketPath` and `fd` is required. */
  readonly socketPath?: string;
  /** An already-listening socket passed by systemd socket activation (`LISTEN_FDS`, usually 3). */
  readonly fd?: number;
  /** File mode of the socket (default 0o600, or 0o660 when `group` is set). Not applied with `fd`. */
  readonly socketMode?: number;
  /** Group (name or gid) to chown the socket to, for shared hosts. */
  readonly group?: string | number;
  /** Largest request line, in bytes (default 4 MiB). Longer lines get -32004. */
  readonly maxLineBytes?: number;
  /** Output a peer may leave unread before it is dropped, in bytes (default 8 MiB). */
  readonly maxPendingWriteBytes?: number;
  /** Requests awaiting responses per connection before reading from it pauses (default 64). */
  readonly maxInFlightPerConnection?: number;
  /** Refuse methods before `initialize` with -32005 (default false: initialize is optional). */
  readonly requireInitialize?: boolean;
  /** What `initialize` reports when no `initialize` handler is given. */
  readonly serverInfo?: { readonly name: string; readonly version: string };
  /** Answer -32006 for a handler still running after this many ms (default 120000; 0 = never). */
  readonly handlerTimeoutMs?: number;
  /** How long close() lets peers hang up before destroying their sockets (default 500 ms). */
  readonly closeGraceMs?: number;
  /** How long close() waits for replies in flight before hanging up (default 10000 ms). */
  readonly drainTimeoutMs?: number;
  /** Most connections served at once; one more gets -32008 and is closed (default 128). */
  readonly maxClients?: number;
  /** Close a connection that sent nothing for this long, unless `keepIdle` says otherwise (default 600000; 0 = never). */
  readonly idleTimeoutMs?: number;
  /** Close a connection that leaves a line unfinished for this long (default 30000; 0 = never). */
  readonly partialLineTimeoutMs?: number;
  /** Connections kept however long they are idle (e.g. subscribed, waiting for pushes). */
  readonly keepIdle?: (connectionId: string) => boolean;
  /** Handlers by wire method name; wrap them with `defineHandler`/`defineHandlers`. */
  readonly handlers: Readonly<Record<string, Handler>>;
  readonly logger?: Logger;
}

/** Options with defaults applied, frozen. */
export interface ResolvedRpcServerOptions {
  readonly socketPath: string | undefined;
  readonly fd: number | undefined;
  readonly socketMode: number;
  readonly gid: number | undefined;
  readonly maxLineBytes: number;
  readonly maxPendingWriteBytes: number;
  readonly maxInFlightPerConnection: number;
  readonly requireInitialize: boolean;
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly closeGraceMs: number;
  readonly drainTimeoutMs: number;
  readonly maxClients: number;
  readonly idleTimeoutMs: number;
  readonly partialLineTimeoutMs: number;
  readonly keepIdle: (connectionId: string) => boolean;
  readonly handlerTimeoutMs: number;
  readonly handlers: Readonly<Record<string, Handler>>;
  readonly logger: Logger;
}

const OPTION_KEYS = new Set<string>([
  'socketPath', 'fd', 'socketMode', 'group', 'maxLineBytes', 'maxPendingWriteBytes', 'maxInFlightPerConnection',
  'requireInitialize', 'serverInfo', 'closeGraceMs', 'handlerTimeoutMs', 'handlers', 'logger',
  'drainTimeoutMs', 'maxClients', 'idleTimeoutMs', 'partialLineTimeoutMs', 'keepIdle',
]);

function durationMs(name: string, value: number | undefined, fallback: number): number {
  return value === 0 ? 0 : positiveInt(name, value, fallback);
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `ipc option ${name} must be a positive integer (got ${String(value)})`, { option: name });
  }
  return value;
}

/** Apply defaults, reject misspelled keys and bad values, freeze. */
export function resolveServerOptions(options: RpcServerOptions): ResolvedRpcServerOptions {
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      throw new ContextdError(ErrorCode.CONFIG_INVALID, `unknown ipc server option ${JSON.stringify(key)}`, { option: key });
    }
  }
  if ((options.socketPath === undefined) === (options.fd === undefined)) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, 'ipc server needs exactly one of socketPath or fd', {});
  }
  if (options.socketPath !== undefined) checkSocketPathLength(options.socketPath);
  const gid = options.group === undefined ? undefined : resolveGroupId(options.group);
  const socketMode = options.socketMode ?? (gid === undefined ? 0o600 : 0o660);
  if (!Number.isInteger(socketMode) || socketMode < 0 || socketMode > 0o777) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `ipc option socketMode must be a file mode such as 0o600`, { option: 'socketMode' });
  }
  return Object.freeze({
    socketPath: options.socketPath,
    fd: options.fd,
    socketMode,
    gid,
    maxLineBytes: positiveInt('maxLineBytes', options.maxLineBytes, 4 * 1024 * 1024),
    maxPendingWriteBytes: positiveInt('maxPendingWriteBytes', options.maxPendingWriteBytes, 8 * 1024 * 1024),
    maxInFlightPerConnection: positiveInt('maxInFlightPerConnection', options.maxInFlightPerConnection, 64),
    requireInitialize: options.requireInitialize ?? false,
    serverInfo: Object.freeze({ ...(options.serverInfo ?? { name: 'contextd', version: VERSION }) }),
    closeGraceMs: positiveInt('closeGraceMs', options.closeGraceMs, 500),
    drainTimeoutMs: durationMs('drainTimeoutMs', options.drainTimeoutMs, 10_000),
    maxClients: positiveInt('maxClients', options.maxClients, 128),
    idleTimeoutMs: durationMs('idleTimeoutMs', options.idleTimeoutMs, 600_000),
    partialLineTimeoutMs: durationMs('partialLineTimeoutMs', options.partialLineTimeoutMs, 30_000),
    keepIdle: options.keepIdle ?? (() => false),
    handlerTimeoutMs: options.handlerTimeoutMs === 0 ? 0 : positiveInt('handlerTimeoutMs', options.handlerTimeoutMs, 120_000),
    handlers: Object.freeze({ ...options.handlers }),
    logger: (options.logger ?? silentLogger()).child({ component: 'ipc' }),
  });
}

export type RpcServerState = 'new' | 'listening' | 'closing' | 'closed';

export interface RpcServerEvents {
  connection: [ConnInfo];
  disconnect: [ConnInfo];
  error: [Error];
}

/** Outcome of probing an existing socket file. */
async function probeSocket(socketPath: string, timeoutMs = 1000): Promise<'live' | 'stale'> {
  return new Promise((resolve) => {
    const sock = net.connect(socketPath);
    const timer = setTimeout(() => {
      sock.destroy();
      resolve('live'); // something holds it but does not answer: do not steal it
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.destroy();
      resolve('live');
    });
    sock.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? 'stale' : 'live');
    });
  });
}

/** JSON-RPC 2.0 over a Unix socket, one JSON object per line. */
export class RpcServer extends EventEmitter<RpcServerEvents> {
  private resolved: ResolvedRpcServerOptions;
  private readonly log: Logger;
  private readonly dispatcher: Dispatcher;
  private readonly server: net.Server;
  private readonly conns = new Map<string, RpcConnection>();
  private nextConnId = 1;
  private refused = 0;
  private lastRefusalLogAt = Number.NEGATIVE_INFINITY;
  private _state: RpcServerState = 'new';
  private listening: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private ownedFile: { path: string; ino: number; dev: number } | undefined;

  /** The options in force (validated). */
  get options(): ResolvedRpcServerOptions {
    return this.resolved;
  }

  /**
   * Limits a config reload changes (SIGHUP), validated as at start: new connections and the open
   * ones get the new timeouts at once; a lower `maxClients` refuses new connections until enough
   * close, and closes none that are open.
   */
  setLimits(limits: Pick<RpcServerOptions, 'maxClients' | 'idleTimeoutMs' | 'partialLineTimeoutMs'>): void {
    const maxClients = positiveInt('maxClients', limits.maxClients, this.resolved.maxClients);
    const idleTimeoutMs = durationMs('idleTimeoutMs', limits.idleTimeoutMs, this.resolved.idleTimeoutMs);
    const partialLineTimeoutMs = durationMs('partialLineTimeoutMs', limits.partialLineTimeoutMs, this.resolved.partialLineTimeoutMs);
    this.resolved = Object.freeze({ ...this.resolved, maxClients, idleTimeoutMs, partialLineTimeoutMs });
    for (const c of this.conns.values()) c.setTimeouts({ idleTimeoutMs, partialLineTimeoutMs });
  }

  constructor(options: RpcServerOptions) {
    super();
    this.resolved = resolveServerOptions(options);
    this.log = this.options.logger;
    this.dispatcher = new Dispatcher({
      handlers: this.options.handlers,
      serverInfo: this.options.serverInfo,
      requireInitialize: this.options.requireInitialize,
      maxLineBytes: this.options.maxLineBytes,
      handlerTimeoutMs: this.options.handlerTimeoutMs,
      logger: this.log,
    });
    this.server = net.createServer({ allowHalfOpen: true }, (socket) => this.accept(socket));
  }

  get state(): RpcServerState {
    return this._state;
  }

  /** The socket path, when listening on a path we created. */
  get socketPath(): string | undefined {
    return this.options.socketPath;
  }

  /** Start listening. Rejects with SOCKET_IN_USE, SOCKET_PATH_TOO_LONG or LIFECYCLE. */
  listen(): Promise<void> {
    if (this._state !== 'new' || this.listening) {
      return Promise.reject(new ContextdError(ErrorCode.LIFECYCLE, `ipc server cannot listen: it is ${this._state}`, { state: this._state }));
    }
    this.listening = this.doListen();
    return this.listening;
  }

  private async doListen(): Promise<void> {
    const { socketPath, fd } = this.options;
    if (fd !== undefined) {
      await this.bind({ fd });
      this.log.info({ fd }, 'listening on inherited socket');
    } else if (socketPath !== undefined) {
      await this.removeStaleSocket(socketPath);
      await this.bindPath(socketPath);
      await fsp.chmod(socketPath, this.options.socketMode);
      if (this.options.gid !== undefined) await fsp.chown(socketPath, -1, this.options.gid);
      this.log.info({ socketPath, mode: this.options.socketMode.toString(8), gid: this.options.gid }, 'listening');
    }
    if (this._state === 'new') this._state = 'listening';
    this.server.on('error', (err) => this.reportError(err));
  }

  private async removeStaleSocket(socketPath: string): Promise<void> {
    let st;
    try {
      st = await fsp.lstat(socketPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    if (!st.isSocket()) {
      throw new ContextdError(ErrorCode.SOCKET_IN_USE, `${socketPath} exists and is not a socket; remove it or choose another socket path`, {
        socketPath,
      });
    }
    if ((await probeSocket(socketPath)) === 'live') {
      throw new ContextdError(
        ErrorCode.SOCKET_IN_USE,
        `another process is listening on ${socketPath} (is contextd already running? try "contextd status --socket ${socketPath}"); stop it or choose another socket path`,
        { socketPath },
      );
    }
    this.log.info({ socketPath }, 'removing stale socket file');
    try {
      await fsp.unlink(socketPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** Bind under a 0177 umask so the socket is never reachable by others, even briefly. */
  private async bindPath(socketPath: string): Promise<void> {
    let restore: number | undefined;
    try {
      restore = process.umask(0o177);
    } catch {
      // Worker threads cannot change the umask; the chmod right after listen still applies.
    }
    try {
      // net.Server binds a path synchronously inside listen(), so the umask covers the bind.
      await this.bind({ path: socketPath }, () => {
        if (restore !== undefined) process.umask(restore);
        restore = undefined;
      });
    } finally {
      if (restore !== undefined) process.umask(restore);
    }
    const st = await fsp.stat(socketPath);
    this.ownedFile = { path: socketPath, ino: st.ino, dev: st.dev };
  }

  private bind(target: { path: string } | { fd: number }, afterCall?: () => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        this.server.off('listening', onListening);
        if (err.code === 'EADDRINUSE' && 'path' in target) {
          reject(new ContextdError(ErrorCode.SOCKET_IN_USE, `socket path ${target.path} is in use; stop the other daemon or choose another socket path`, { socketPath: target.path }, { cause: err }));
        } else {
          reject(err);
        }
      };
      const onListening = (): void => {
        this.server.off('error', onError);
        resolve();
      };
      this.server.once('error', onError);
      this.server.once('listening', onListening);
      try {
        this.server.listen(target);
      } finally {
        afterCall?.();
      }
    });
  }

  private accept(socket: net.Socket): void {
    if (this._state !== 'listening') {
      socket.destroy();
      return;
    }
    if (this.conns.size >= this.options.maxClients) {
      this.refuse(socket);
      return;
    }
    const id = `c${this.nextConnId++}`;
    const conn = new RpcConnection(
      id,
      socket,
      this.dispatcher,
      {
        maxLineBytes: this.options.maxLineBytes,
        maxPendingWriteBytes: this.options.maxPendingWriteBytes,
        maxInFlight: this.options.maxInFlightPerConnection,
        idleTimeoutMs: this.options.idleTimeoutMs,
        partialLineTimeoutMs: this.options.partialLineTimeoutMs,
        keepIdle: this.options.keepIdle,
      },
      this.log,
      (c, reason) => this.onConnectionClosed(c, reason),
      Date.now(),
    );
    this.conns.set(id, conn);
    this.log.debug({ connectionId: id }, 'connection accepted');
    this.emit('connection', conn.info());
  }

  /** Over the connection limit: one JSON-RPC error (id null), then close. Logged at most once a minute. */
  private refuse(socket: net.Socket): void {
    this.refused++;
    const now = Date.now();
    if (now - this.lastRefusalLogAt >= 60_000) {
      this.lastRefusalLogAt = now;
      this.log.warn({ maxClients: this.options.maxClients, refusedSoFar: this.refused }, 'connection refused: too many clients');
    }
    const error = new RpcError(RpcErrorCode.TOO_MANY_CLIENTS, `contextd serves at most ${this.options.maxClients} connections at once (maxClients): close idle clients or raise maxClients`, { maxClients: this.options.maxClients });
    socket.on('error', () => undefined);
    // The descriptor is given back as soon as the error is in the kernel's buffer (the peer still
    // reads it, then EOF): waiting for the peer's own close would let a burst of refused clients
    // hold one descriptor each and push the daemon into EMFILE, where libuv drops connections
    // without a word. The grace timer only covers a peer that never drains the error.
    socket.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: error.toJSON() }) + '\n', () => socket.destroy());
    const t = setTimeout(() => socket.destroy(), this.options.closeGraceMs);
    t.unref();
    socket.once('close', () => clearTimeout(t));
  }

  private onConnectionClosed(conn: RpcConnection, reason: CloseReason): void {
    if (!this.conns.delete(conn.id)) return;
    this.log.debug({ connectionId: conn.id, reason }, 'connection closed');
    this.emit('disconnect', conn.info());
  }

  private reportError(err: Error): void {
    this.log.error({ err }, 'ipc server error');
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  /** Push a notification to one connection. False when it is gone or was dropped as too slow. */
  notify(connectionId: string, method: string, params: unknown): boolean {
    const conn = this.conns.get(connectionId);
    return conn ? conn.notify(method, params) : false;
  }

  /**
   * Push one notification to several connections, encoded once (a plan can be large). Returns
   * how many it reached (gone or too-slow connections are skipped).
   */
  notifyAll(connectionIds: readonly string[], method: string, params: unknown): number {
    const conns = connectionIds.map((id) => this.conns.get(id)).filter((c) => c !== undefined);
    if (conns.length === 0) return 0;
    const line = encodeNotification(method, params, this.log);
    if (line === undefined) return 0;
    let n = 0;
    for (const c of conns) if (c.notifyEncoded(line)) n++;
    return n;
  }

  /** Snapshots of the open connections. */
  connections(): ConnInfo[] {
    return [...this.conns.values()].map((c) => c.info());
  }

  /** Largest unread output seen on a connection, in bytes (diagnostics). */
  peakPendingBytes(connectionId: string): number | undefined {
    return this.conns.get(connectionId)?.peakPendingBytes;
  }

  /** Stop listening, hang up on every peer, remove our socket file. Idempotent: same promise. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    const wasNew = this._state === 'new' && !this.listening;
    this._state = 'closing';
    if (wasNew) {
      this._state = 'closed';
      return;
    }
    try {
      await this.listening;
    } catch {
      // listen failed: nothing is bound, nothing to remove
      this._state = 'closed';
      return;
    }
    // Stop accepting, let replies in flight be written (bounded), then hang up.
    const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    await Promise.all([...this.conns.values()].map((c) => c.drain(this.options.drainTimeoutMs)));
    await Promise.all([...this.conns.values()].map((c) => c.close(this.options.closeGraceMs)));
    await serverClosed;
    await this.removeOwnedFile();
    this._state = 'closed';
    this.log.info({ socketPath: this.options.socketPath }, 'closed');
  }

  /**
   * Remove the socket file if it is still the one we created. (libuv already unlinks the path
   * when the pipe handle closes; this covers runtimes that do not, and never removes a file
   * that is not our socket.)
   */
  private async removeOwnedFile(): Promise<void> {
    const owned = this.ownedFile;
    if (!owned) return;
    try {
      const st = await fsp.lstat(owned.path);
      if (st.ino === owned.ino && st.dev === owned.dev) await fsp.unlink(owned.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ err, socketPath: owned.path }, 'could not remove socket file');
    }
  }
}
