import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { openDb, type Db } from '../../src/store/index.js';
import { stateDbPath } from '../../src/store/paths.js';
import { createTokenCounter, type TokenCounter } from '../../src/model/tokens.js';
import { runtimeCollector } from '../../src/util/gc.js';
import { expect } from 'vitest';

/** Helpers of the daemon tests that drive a daemon through its socket. */

/**
 * The first value `probe` resolves to that is not undefined, asked every 50 ms; throws after
 * 20 s naming `what`.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A daemon in this process and a client connected to it. */
export interface StartedDaemon {
  readonly daemon: Daemon;
  readonly c: ContextdClient;
  /** Closes the client, then stops the daemon. */
  stop(): Promise<void>;
}

/**
 * Start a daemon watching `dir/sessions`, its socket and state in `dir` (a budget of 1M tokens),
 * and connect a client; resolves once the daemon reports ready.
 */
export async function startDaemon(dir: string, logger: Logger = pino({ level: 'silent' })): Promise<StartedDaemon> {
  const options = resolveDaemonOptions({}, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state'), budgetTokens: 1_000_000 });
  const daemon = new Daemon(options, { logger });
  await daemon.start();
  const c = new ContextdClient({ socketPath: options.socketPath, clientInfo: { name: 'test', version: '1' }, reconnect: false });
  try {
    await c.connect();
  } catch (err) {
    await daemon.stop();
    throw err;
  }
  return {
    daemon,
    c,
    stop: async () => {
      await c.close();
      await daemon.stop();
    },
  };
}

/** `read` of the state database of a daemon started with `startDaemon(dir)`, opened for it and closed after. */
export function inState<T>(dir: string, read: (db: Db) => T): T {
  const db = openDb(stateDbPath(join(dir, 'state')));
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** A new temp folder for `startDaemon`, with `sessions/<name>.jsonl` holding each transcript given. */
export function sessionsDir(prefix: string, transcripts: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(dir, 'sessions'));
  for (const [name, text] of Object.entries(transcripts)) writeFileSync(join(dir, 'sessions', `${name}.jsonl`), text);
  return dir;
}

/**
 * The real tokenizer, except that while `down()` it throws as tiktoken's load does when it cannot
 * open its files (EMFILE): on texts holding `marker`, or on every text without one. The seam the
 * daemon tests make applying lines throw at (an injected fault: no transcript line does).
 */
export function failingCounter(down: () => boolean, marker?: string): TokenCounter {
  const real = createTokenCounter();
  return {
    encoding: real.encoding,
    count: (text: string) => {
      if (down() && (marker === undefined || text.includes(marker))) throw Object.assign(new Error("EMFILE: too many open files, open 'tiktoken_bg.wasm'"), { code: 'EMFILE' });
      return real.count(text);
    },
  };
}

/**
 * Asserts that what `ref` points at is garbage: after a turn of the event loop (callbacks of the
 * release run), a full collection leaves it collected. Fails where the runtime has no collection.
 */
export async function expectCollected(ref: WeakRef<object>): Promise<void> {
  const collect = runtimeCollector();
  expect(collect).toBeDefined();
  await new Promise((r) => setImmediate(r));
  collect?.();
  expect(ref.deref()).toBeUndefined();
}
