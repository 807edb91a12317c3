/** Spawn the real `contextd` CLI from dist/ and follow its NDJSON logs. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ContextdClient } from '../../src/ipc/client.js';

export const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

export interface SpawnedDaemon {
  readonly proc: ChildProcess;
  readonly logs: LogLine[];
  readonly stdout: () => string;
  waitForLog(predicate: (l: LogLine) => boolean, timeoutMs?: number, what?: string): Promise<LogLine>;
  /** Resolves with the exit code (or signal) once the process is gone. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Start `contextd daemon ARGS` and resolve once it logs that it is running. */
export async function spawnDaemon(args: readonly string[], env: NodeJS.ProcessEnv = {}, opts: { prefix?: readonly string[]; waitRunning?: boolean } = {}): Promise<SpawnedDaemon> {
  if (process.env['CONTEXTD_BUILD_FAILED']) throw new Error(`the build failed, so the e2e tests cannot run:\n${process.env['CONTEXTD_BUILD_FAILED']}`);
  if (!existsSync(CLI)) throw new Error(`${CLI} missing: the global setup builds it`);
  // `prefix` runs the daemon under another command (prlimit, setpriv, sh -c 'umask …').
  const [cmd, ...cmdArgs] = [...(opts.prefix ?? []), process.execPath, CLI, 'daemon', ...args] as [string, ...string[]];
  const proc = spawn(cmd, cmdArgs, {
    env: { ...process.env, CONTEXTD_LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let out = '';
  let errBuf = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => {
    errBuf += d.toString();
    let nl: number;
    while ((nl = errBuf.indexOf('\n')) >= 0) {
      const line = errBuf.slice(0, nl);
      errBuf = errBuf.slice(nl + 1);
      let parsed: LogLine;
      try {
        parsed = JSON.parse(line) as LogLine;
      } catch {
        parsed = { level: 'raw', msg: line };
      }
      logs.push(parsed);
      for (const w of [...waiters]) {
        if (w.pred(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const waitForLog = (pred: (l: LogLine) => boolean, timeoutMs = 20_000, what = 'log line'): Promise<LogLine> => {
    const found = logs.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise<LogLine>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last logs:\n${logs.slice(-15).map((l) => JSON.stringify(l)).join('\n')}`)), timeoutMs);
      const w = {
        pred,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      waiters.push(w);
      void exited.then(({ code, signal }) => {
        if (waiters.includes(w)) {
          clearTimeout(timer);
          reject(new Error(`daemon exited (code ${code}, signal ${signal}) while waiting for ${what}; last logs:\n${logs.slice(-15).map((l) => JSON.stringify(l)).join('\n')}`));
        }
      });
    });
  };
  const d: SpawnedDaemon = { proc, logs, stdout: () => out, waitForLog, exited };
  if (opts.waitRunning !== false) await waitForLog((l) => l.msg === 'contextd running', 30_000, 'contextd running');
  return d;
}

/** Run the CLI to completion and capture its output. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`contextd ${args.join(' ')} timed out; stderr: ${stderr.slice(-2000)}`));
    }, timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Subscribe once the daemon has read the first line of `file` (retried until `timeoutMs`). */
export async function subscribeWhenSeen(c: ContextdClient, file: string, timeoutMs = 15_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return (await c.subscribe({ transcriptPath: file })).sessionId;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Temp dir laid out for one daemon: a watched `sessions/` folder, socket and state paths. */
export interface DaemonDir {
  readonly dir: string;
  readonly watch: string;
  readonly socket: string;
  readonly state: string;
}

/** What an e2e suite sets up; everything is undone after each test, newest first. */
export interface E2eScope {
  /** Run `fn` after the current test (cleanups run newest first). */
  defer(fn: () => Promise<void> | void): void;
  /** A fresh empty temp dir (`contextd-PREFIX-…`), removed after the test. */
  emptyDir(prefix?: string): string;
  /** {@link emptyDir} laid out for a daemon: an empty `sessions/` to watch, socket and state paths. */
  tempDir(prefix?: string): DaemonDir;
  /** {@link spawnDaemon}, killed after the test if it is still running. */
  daemon(args: readonly string[], env?: NodeJS.ProcessEnv, opts?: { prefix?: readonly string[]; waitRunning?: boolean }): Promise<SpawnedDaemon>;
  /** A connected client (no reconnect) on `socket`, closed after the test. */
  client(socket: string, name?: string): Promise<ContextdClient>;
}

/**
 * The one cleanup registry of the e2e suites: call at the top of a test file; it registers an
 * `afterEach` that kills the daemons, closes the clients and removes the temp dirs it handed out.
 */
export function e2eScope(): E2eScope {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const defer = (fn: () => Promise<void> | void): void => void cleanups.push(fn);
  const emptyDir = (prefix = 'e2e'): string => {
    const dir = mkdtempSync(join(tmpdir(), `contextd-${prefix}-`));
    defer(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };
  return {
    defer,
    emptyDir,
    tempDir(prefix = 'e2e') {
      const dir = emptyDir(prefix);
      const watch = join(dir, 'sessions');
      mkdirSync(watch);
      return { dir, watch, socket: join(dir, 'contextd.sock'), state: join(dir, 'state') };
    },
    async daemon(args, env = {}, opts = {}) {
      const d = await spawnDaemon(args, env, opts);
      defer(async () => {
        if (d.proc.exitCode === null && d.proc.signalCode === null) {
          d.proc.kill('SIGKILL');
          await d.exited;
        }
      });
      return d;
    },
    async client(socket, name = 'e2e') {
      const c = new ContextdClient({ socketPath: socket, clientInfo: { name, version: '1' }, reconnect: false });
      await c.connect();
      defer(() => c.close());
      return c;
    },
  };
}
