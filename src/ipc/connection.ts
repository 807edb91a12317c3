/**
 * One accepted socket: frames input with LineFramer, hands lines to the dispatcher, writes
 * responses in request order, and drops a peer that stops reading once its pending output
 * would exceed `maxPendingWriteBytes`.
 */
import type { Socket } from 'node:net';
import { LineFramer, type FramedLine } from '../util/framer.js';
import type { Logger } from '../util/logger.js';
import type { DispatchConnection, Dispatcher } from './dispatch.js';
import type { JsonRpcResponse } from './protocol.js';
import { RpcError, RpcErrorCode } from './errors.js';

/** A connection as the server's users see it (a snapshot). */
export interface ConnInfo {
  readonly id: string;
  /** Epoch ms of accept. */
  readonly connectedAt: number;
  /** True once `initialize` succeeded on this connection. */
  readonly initialized: boolean;
  readonly client?: { readonly name: string; readonly version: string };
  readonly capabilities?: Readonly<Record<string, unknown>>;
}

export interface ConnectionLimits {
  readonly maxLineBytes: number;
  readonly maxPendingWriteBytes: number;
  /** At most this many requests of one peer run (or wait to be written) at once; reading pauses meanwhile. */
  readonly maxInFlight: number;
  /** Close after this long with nothing received (0 = never), unless `keepIdle(id)`. */
  readonly idleTimeoutMs?: number;
  /** Close when a line stays unfinished this long (0 = never). */
  readonly partialLineTimeoutMs?: number;
  /** Connections exempt from the idle timeout (subscribed ones waiting for pushes). */
  readonly keepIdle?: (connectionId: string) => boolean;
}

interface Slot {
  payload: string | null | undefined; // undefined = still running, null = nothing to send
}

/** Why a connection ended, for the log. */
export type CloseReason = 'peer' | 'slow-consumer' | 'server-close' | 'error' | 'idle-timeout' | 'partial-line-timeout';

export class RpcConnection {
  readonly state: DispatchConnection;
  readonly connectedAt: number;
  private readonly framer: LineFramer;
  private readonly slots: Slot[] = [];
  /** Framed lines not yet dispatched (at most one read's worth: the socket is paused meanwhile). */
  private readonly backlog: FramedLine[] = [];
  private closed = false;
  private paused = false;
  private peerEnded = false;
  private reason: CloseReason = 'peer';
  /** The server is shutting down: nothing more is read; replies in flight are still written. */
  private draining = false;
  private drained: (() => void) | undefined;
  private lastInputAt: number;
  private partialSince: number | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  /** Largest pending output observed (diagnostics and tests). */
  peakPendingBytes = 0;

  constructor(
    id: string,
    private readonly socket: Socket,
    private readonly dispatcher: Dispatcher,
    private limits: ConnectionLimits,
    private readonly log: Logger,
    onClose: (conn: RpcConnection, reason: CloseReason) => void,
    now: number,
  ) {
    this.state = { id, initialized: false };
    this.connectedAt = now;
    this.lastInputAt = now;
    this.framer = new LineFramer({ maxLineBytes: limits.maxLineBytes });
    this.armWatchdog();
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // Resets and broken pipes are routine for a local peer that went away.
      this.log.debug({ connectionId: id, code: err.code, err: err.message }, 'connection error');
      if (this.reason === 'peer') this.reason = 'error';
    });
    // The server runs with allowHalfOpen: a peer that sends its requests and shuts down its
    // write side (`printf '…' | socat - UNIX-CONNECT:…`) still gets every response, then EOF.
    socket.on('end', () => {
      this.peerEnded = true;
      // A final line without its newline still counts at a clean EOF.
      if (this.framer.pendingLength > 0) this.onData(Buffer.from('\n'));
      this.finishIfDone();
    });
    socket.on('close', () => {
      this.closed = true;
      if (this.watchdog) clearInterval(this.watchdog);
      this.drained?.();
      if (this.framer.pendingLength > 0) {
        this.log.debug({ connectionId: id, partialBytes: this.framer.pendingLength }, 'peer left mid-line');
      }
      onClose(this, this.reason);
    });
  }

  get id(): string {
    return this.state.id;
  }

  get isOpen(): boolean {
    return !this.closed && !this.socket.destroyed;
  }

  info(): ConnInfo {
    const s = this.state;
    return Object.freeze({
      id: s.id,
      connectedAt: this.connectedAt,
      initialized: s.initialized,
      ...(s.client ? { client: { ...s.client } } : {}),
      ...(s.capabilities ? { capabilities: { ...s.capabilities } } : {}),
    });
  }

  /** Push a notification. False when the connection is gone or was just dropped as too slow. */
  notify(method: string, params: unknown): boolean {
    const line = encodeNotification(method, params, this.log, this.id);
    return line !== undefined && this.write(line);
  }

  /** Push a notification already encoded by `encodeNotification` (one encoding for many connections). */
  notifyEncoded(line: string): boolean {
    return this.write(line);
  }

  /** End gracefully; destroy after `graceMs` if the peer does not close. Resolves on close. */
  close(graceMs: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.reason = 'server-close';
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.socket.destroy(), graceMs);
      timer.unref();
      this.socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      this.socket.end();
    });
  }

  /**
   * Shutdown: read nothing more, and resolve once every reply in flight was handed to the
   * socket (or after `timeoutMs`).
   */
  drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    this.backlog.length = 0;
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.slots.length === 0 || this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        if (timer) clearTimeout(timer);
        this.drained = undefined;
        if (this.slots.length > 0) this.log.warn({ connectionId: this.id, pending: this.slots.length }, 'shutdown: replies still running were abandoned');
        resolve();
      };
      if (timeoutMs > 0) {
        timer = setTimeout(done, timeoutMs);
        timer.unref();
      }
      this.drained = done;
    });
  }

  /**
   * New idle and partial-line limits (a config reload): in force at once, the idle time counted
   * from the last input as before.
   */
  setTimeouts(timeouts: Pick<ConnectionLimits, 'idleTimeoutMs' | 'partialLineTimeoutMs'>): void {
    this.limits = { ...this.limits, ...timeouts };
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    if (!this.closed) this.armWatchdog();
  }

  /** One timer per connection checks the idle and partial-line limits. */
  private armWatchdog(): void {
    const idle = this.limits.idleTimeoutMs ?? 0;
    const partial = this.limits.partialLineTimeoutMs ?? 0;
    const limits = [idle, partial].filter((ms) => ms > 0);
    if (limits.length === 0) return;
    const every = Math.max(10, Math.min(1_000, Math.floor(Math.min(...limits) / 4)));
    this.watchdog = setInterval(() => this.checkTimeouts(), every);
    this.watchdog.unref();
  }

  private checkTimeouts(): void {
    if (this.closed || this.draining) return;
    const now = Date.now();
    const partial = this.limits.partialLineTimeoutMs ?? 0;
    if (partial > 0 && this.partialSince !== undefined && now - this.partialSince >= partial) {
      this.timeOut('partial-line-timeout', `a request line stayed unfinished for ${partial} ms (partialLineTimeoutMs): end each request with a newline`);
      return;
    }
    const idle = this.limits.idleTimeoutMs ?? 0;
    if (idle > 0 && now - this.lastInputAt >= idle && this.slots.length === 0 && !(this.limits.keepIdle?.(this.id) ?? false)) {
      this.timeOut('idle-timeout', `no request for ${idle} ms and no subscription (idleTimeoutMs): reconnect when needed`);
    }
  }

  /** Tell the peer why, then close. */
  private timeOut(reason: CloseReason, message: string): void {
    this.reason = reason;
    this.log.info({ connectionId: this.id, reason }, 'closing connection');
    if (this.watchdog) clearInterval(this.watchdog);
    this.draining = true;
    this.write(JSON.stringify({ jsonrpc: '2.0', id: null, error: new RpcError(RpcErrorCode.CONNECTION_TIMEOUT, message).toJSON() }) + '\n');
    this.socket.end();
    const t = setTimeout(() => this.socket.destroy(), 1_000);
    t.unref();
  }

  private onData(chunk: Buffer): void {
    if (this.draining) return;
    this.lastInputAt = Date.now();
    const lines = this.framer.push(chunk);
    for (const line of lines) this.backlog.push(line);
    // The clock of an unfinished line starts when that line began.
    if (this.framer.pendingLength === 0) this.partialSince = undefined;
    else if (lines.length > 0 || this.partialSince === undefined) this.partialSince = this.lastInputAt;
    this.pump();
  }

  /**
   * Dispatch queued lines while fewer than `maxInFlight` responses are outstanding; pause the
   * socket while lines wait, so a flood is held in the kernel rather than in memory.
   */
  private pump(): void {
    while (this.backlog.length > 0 && this.slots.length < this.limits.maxInFlight && !this.closed && !this.draining) {
      const line = this.backlog.shift() as FramedLine;
      const slot: Slot = { payload: undefined };
      this.slots.push(slot);
      void this.dispatcher.handleLine(line, this.state).then(
        (response) => this.fill(slot, response),
        // handleLine never rejects; this guards the invariant anyway.
        (err: unknown) => {
          this.log.error({ connectionId: this.id, err }, 'dispatch failed');
          this.fill(slot, { jsonrpc: '2.0', id: null, error: new RpcError(RpcErrorCode.INTERNAL_ERROR, 'internal error in contextd: see the daemon log').toJSON() });
        },
      );
    }
    const shouldPause = this.backlog.length > 0 || this.slots.length >= this.limits.maxInFlight;
    if (shouldPause && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!shouldPause && this.paused && this.isOpen && !this.draining) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private fill(slot: Slot, response: JsonRpcResponse | undefined): void {
    slot.payload = response === undefined ? null : this.encode(response);
    this.flush();
    if (this.draining && this.slots.length === 0) this.drained?.();
  }

  private encode(response: JsonRpcResponse): string {
    try {
      return JSON.stringify(response) + '\n';
    } catch (err) {
      this.log.error({ connectionId: this.id, err }, 'result could not be encoded as JSON');
      const id = response.id;
      return JSON.stringify({ jsonrpc: '2.0', id, error: { code: RpcErrorCode.INTERNAL_ERROR, message: 'internal error in contextd: the result could not be encoded as JSON' } }) + '\n';
    }
  }

  /** Write finished responses from the head of the queue, keeping request order. */
  private flush(): void {
    while (this.slots.length > 0) {
      const head = this.slots[0] as Slot;
      if (head.payload === undefined) break;
      this.slots.shift();
      if (head.payload !== null) this.write(head.payload);
    }
    this.pump();
    this.finishIfDone();
  }

  /** After the peer's EOF, end our side once every response is written. */
  private finishIfDone(): void {
    if (this.peerEnded && this.slots.length === 0 && this.backlog.length === 0 && this.isOpen && !this.socket.writableEnded) {
      this.socket.end();
    }
  }

  private write(line: string): boolean {
    if (!this.isOpen) return false;
    const bytes = Buffer.byteLength(line, 'utf8');
    const pending = this.socket.writableLength;
    // A single large message is allowed when nothing is queued; a peer that lets output pile
    // up past the cap is not reading and is dropped rather than buffered without bound.
    if (pending > 0 && pending + bytes > this.limits.maxPendingWriteBytes) {
      this.log.warn(
        { connectionId: this.id, pendingBytes: pending, nextBytes: bytes, maxPendingWriteBytes: this.limits.maxPendingWriteBytes },
        'dropping slow consumer: it is not reading its socket',
      );
      this.reason = 'slow-consumer';
      this.socket.destroy();
      return false;
    }
    this.socket.write(line);
    if (this.socket.writableLength > this.peakPendingBytes) this.peakPendingBytes = this.socket.writableLength;
    return true;
  }
}

/** A notification as one line of JSON, or undefined (logged) when params cannot be encoded. */
export function encodeNotification(method: string, params: unknown, log: Logger, connectionId?: string): string | undefined {
  try {
    return JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n';
  } catch (err) {
    log.error({ ...(connectionId !== undefined ? { connectionId } : {}), method, err }, 'notification could not be encoded');
    return undefined;
  }
}
