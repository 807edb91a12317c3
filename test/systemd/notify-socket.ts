/**
 * A real AF_UNIX datagram socket standing in for systemd's notify socket.
 *
 * Node cannot create datagram Unix sockets, so `systemd-socket-activate --datagram` (same
 * package as systemd-notify) binds it and execs a tiny Node reader with the socket as fd 3;
 * `read(2)` on a datagram socket returns one datagram, which the reader prints as a JSON line.
 * This is also how the socket-activation handover itself is exercised.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const READER = `
const fs = require('node:fs');
const buf = Buffer.alloc(65536);
const pause = new Int32Array(new SharedArrayBuffer(4));
for (;;) {
  let n;
  try { n = fs.readSync(3, buf, 0, buf.length, null); }
  catch (e) { if (e.code === 'EAGAIN') { Atomics.wait(pause, 0, 0, 20); continue; } throw e; }
  process.stdout.write(JSON.stringify(buf.subarray(0, n).toString('utf8')) + '\\n');
}
`;

export interface NotifySocket {
  readonly path: string;
  /** Every datagram received so far, split into its `KEY=value` lines. */
  readonly datagrams: string[][];
  /** Resolves once a datagram satisfies `pred` (rejects after `timeoutMs`). */
  waitFor(pred: (d: string[]) => boolean, timeoutMs?: number): Promise<string[]>;
  close(): Promise<void>;
}

/** Wait until `text()` matches `re`, re-checking on every `onChange` call; rejects on timeout. */
function waitForText(proc: ChildProcess, text: () => string, re: RegExp, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (re.test(text())) {
        cleanup();
        resolve();
      }
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`systemd-socket-activate exited (${code}) before ${re}: ${text()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`timed out waiting for ${re}: ${text()}`));
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      proc.stderr?.off('data', check);
      proc.off('exit', onExit);
    };
    proc.stderr?.on('data', check);
    proc.on('exit', onExit);
    check();
  });
}

/**
 * Bind a datagram socket at `<dir>/notify.sock` (or, with `abstract`, at a unique name in
 * the abstract namespace, written `@name` as systemd does) and collect what arrives.
 */
export async function startNotifySocket(dir: string, opts: { abstract?: boolean } = {}): Promise<NotifySocket> {
  const path = opts.abstract ? `@contextd-test-${process.pid}-${Math.random().toString(36).slice(2)}` : join(dir, 'notify.sock');
  const reader = join(dir, 'reader.cjs');
  writeFileSync(reader, READER);
  const proc = spawn('systemd-socket-activate', ['--datagram', `--listen=${path}`, process.execPath, reader], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (c: string) => (stderr += c));
  const spawnError = new Promise<never>((_, reject) => proc.once('error', (e) => reject(new Error(`cannot run systemd-socket-activate (package "systemd"): ${e.message}`))));
  await Promise.race([waitForText(proc, () => stderr, /Listening on /, 10_000), spawnError]);

  const datagrams: string[][] = [];
  const waiters = new Set<() => void>();
  let partial = '';
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      datagrams.push((JSON.parse(line) as string).split('\n').filter((l) => l !== ''));
    }
    for (const w of [...waiters]) w();
  });

  const waitFor = (pred: (d: string[]) => boolean, timeoutMs = 10_000): Promise<string[]> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const hit = datagrams.find(pred);
        if (hit) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for a datagram; got ${JSON.stringify(datagrams)}; stderr: ${stderr}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });

  const close = (): Promise<void> =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        resolve();
        return;
      }
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });

  return { path, datagrams, waitFor, close };
}
