/**
 * One client connection to the daemon: framing, request ids, pending replies and their
 * timeouts. The client (client.ts) owns lifecycle, reconnects and subscriptions on top of it.
 */
import * as net from 'node:net';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { LineFramer } from '../util/framer.js';
import type { Logger } from '../util/logger.js';
import { RpcError, RpcErrorCode } from './errors.js';
import type { JsonRpcErrorObject } from './protocol.js';

/** A DAEMON_UNREACHABLE error (connection missing, lost, closed or silent). */
export function unreachable(message: string, details: Record<string, unknown>): ContextdError {
  return new ContextdError(ErrorCode.DAEMON_UNREACHABLE, message, details);
}

/** Connect to `socketPath`, rejecting with an actionable DAEMON_UNREACHABLE. */
export function connectSocket(socketPath: string): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect(socketPath);
    const onError = (err: NodeJS.ErrnoException): void =>
      reject(
        unreachable(`cannot reach contextd at ${socketPath} (${err.code ?? err.message}): is the daemon running? start it with "contextd daemon"`, {
          socketPath,
          code: err.code,
        }),
      );
    s.once('error', onError);
    s.once('connect', () => {
      s.off('error', onError);
      resolve(s);
    });
  });
}

export interface TransportHooks {
  onNotification(method: string, params: unknown): void;
  onError(err: Error): void;
  /** The socket closed; every pending request has been rejected already. */
  onClose(): void;
}

interface Pending {
  readonly method: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout | undefined;
}

export class ClientTransport {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly socket: net.Socket,
    private readonly opts: { readonly maxLineBytes: number; readonly requestTimeoutMs: number; readonly socketPath: string },
    private readonly hooks: TransportHooks,
    // Only `debug` is used: a caller that must not load pino (the hook) passes a bare sink.
    private readonly log: Pick<Logger, 'debug'>,
  ) {
    const framer = new LineFramer({ maxLineBytes: opts.maxLineBytes });
    socket.on('data', (chunk: Buffer) => {
      for (const line of framer.push(chunk)) {
        if (line.oversized) {
          hooks.onError(new Error(`contextd sent a ${line.length}-byte line, over the client's ${opts.maxLineBytes}-byte limit`));
          continue;
        }
        this.onLine(line.bytes.toString('utf8'));
      }
    });
    socket.on('error', (err) => this.log.debug({ err: err.message }, 'socket error'));
    socket.on('close', () => {
      this.closed = true;
      this.rejectAll((method) => unreachable(`connection to contextd closed before the reply to ${method}`, { method, reason: 'disconnected' }));
      hooks.onClose();
    });
  }

  get isOpen(): boolean {
    return !this.closed && !this.socket.destroyed;
  }

  /** Send a request; resolves with its result, rejects with RpcError or DAEMON_UNREACHABLE. */
  call(method: string, params: unknown): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (!this.isOpen) {
        reject(unreachable(`not connected to contextd at ${this.opts.socketPath}`, { method, reason: 'disconnected' }));
        return;
      }
      const id = this.nextId++;
      const timeoutMs = this.opts.requestTimeoutMs;
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              reject(unreachable(`contextd did not answer ${method} within ${timeoutMs} ms`, { method, timeoutMs, reason: 'timeout' }));
            }, timeoutMs)
          : undefined;
      this.pending.set(id, { method, resolve, reject, timer });
      this.write({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** Reject every pending request with the error `make` builds. */
  rejectAll(make: (method: string) => Error): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      if (p.timer) clearTimeout(p.timer);
      p.reject(make(p.method));
    }
  }

  /** Destroy the socket; resolves once it closed. */
  destroy(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.destroy();
    });
  }

  private write(obj: unknown): void {
    this.socket.write(JSON.stringify(obj) + '\n');
  }

  private onLine(text: string): void {
    if (text.trim() === '') return;
    let msg: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      msg = parsed as Record<string, unknown>;
    } catch {
      this.hooks.onError(new Error('contextd sent a line that is not a JSON-RPC object'));
      return;
    }
    const id = msg['id'];
    if (typeof msg['method'] === 'string') {
      if (id !== undefined) {
        // The protocol has no server→client requests.
        this.write({ jsonrpc: '2.0', id, error: { code: RpcErrorCode.METHOD_NOT_FOUND, message: `client does not handle ${msg['method']}` } });
        return;
      }
      this.hooks.onNotification(msg['method'], msg['params']);
      return;
    }
    const pending = typeof id === 'number' ? this.pending.get(id) : undefined;
    const error = msg['error'] as Partial<JsonRpcErrorObject> | null | undefined;
    if (!pending) {
      if (error) this.hooks.onError(new RpcError(Number(error.code), String(error.message), error.data));
      else this.log.debug({ id }, 'response to an unknown or timed-out request');
      return;
    }
    this.pending.delete(id as number);
    if (pending.timer) clearTimeout(pending.timer);
    if (error) pending.reject(new RpcError(Number(error.code), String(error.message), error.data));
    else pending.resolve(msg['result']);
  }
}
