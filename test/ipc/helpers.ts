import type { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { RpcServer, type RpcServerOptions } from '../../src/ipc/server.js';
import { ContextdClient, type ContextdClientOptions } from '../../src/ipc/client.js';

/** Things to close after each test, newest first. */
export class Resources {
  private readonly items: Array<() => Promise<void> | void> = [];

  add(fn: () => Promise<void> | void): void {
    this.items.push(fn);
  }

  tmpDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contextd-'));
    this.add(() => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  server(options: RpcServerOptions): RpcServer {
    const s = new RpcServer(options);
    this.add(() => s.close());
    return s;
  }

  client(options: ContextdClientOptions): ContextdClient {
    const c = new ContextdClient(options);
    this.add(() => c.close());
    return c;
  }

  async raw(socketPath: string): Promise<RawPeer> {
    const peer = await RawPeer.connect(socketPath);
    this.add(() => peer.destroy());
    return peer;
  }

  async closeAll(): Promise<void> {
    while (this.items.length > 0) {
      const fn = this.items.pop() as () => Promise<void> | void;
      await fn();
    }
  }
}

/** Resolve with the event's args, or reject after `ms`. */
export function waitEvent<T extends unknown[] = unknown[]>(emitter: EventEmitter, event: string, ms = 5000): Promise<T> {
  // Not events.once: that also rejects on 'error', which some tests expect to be emitted.
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`timed out after ${ms} ms waiting for '${event}'`));
    }, ms);
    const listener = (...args: unknown[]): void => {
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(args as T);
    };
    emitter.on(event, listener);
  });
}

/** Poll a condition on each macrotask until true or `ms` passes (no fixed sleeps). */
export async function waitUntil(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 5));
  }
}

/** A bare socket peer that speaks lines: for probing the server with junk. */
export class RawPeer {
  private buf = '';
  private readonly lines: string[] = [];
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        this.lines.push(this.buf.slice(0, nl));
        this.buf = this.buf.slice(nl + 1);
      }
      this.wake();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  static connect(socketPath: string): Promise<RawPeer> {
    return new Promise((resolve, reject) => {
      const s = net.connect(socketPath);
      s.once('connect', () => resolve(new RawPeer(s)));
      s.once('error', reject);
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  write(text: string | Buffer): void {
    this.socket.write(text);
  }

  send(obj: unknown): void {
    this.socket.write(JSON.stringify(obj) + '\n');
  }

  /** Next line from the server, parsed. */
  async next(ms = 5000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + ms;
    while (this.lines.length === 0) {
      if (this.closed) throw new Error('peer closed while waiting for a line');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a line');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return JSON.parse(this.lines.shift() as string) as Record<string, unknown>;
  }

  /** Number of lines received and not yet read. */
  get buffered(): number {
    return this.lines.length;
  }

  async request(id: number | string, method: string, params?: unknown): Promise<Record<string, unknown>> {
    this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    return this.next();
  }

  /** Shut down our write side (EOF to the server); we can still read. */
  end(): void {
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }
}
