/**
 * The tailer's descriptor bound (`maxOpenFiles`, 64) holds while many transcripts are read at
 * once, so a folder of a few hundred transcripts under the documented `ulimit -n 256` is read
 * whole. (It did not hold, found by an audit: transcripts were left unread for good after
 * EMFILE, the tokenizer's lazy require failed, the daemon never reported ready, and SIGTERM
 * hung.) Real daemon under a real descriptor limit (prlimit), real files.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { e2eScope, type LogLine, type SpawnedDaemon } from './spawn.js';

const scope = e2eScope();
/** The tailer's default bound on transcript descriptors (docs/configuration.md). */
const MAX_OPEN_FILES = 64;

function writeTranscripts(dir: string, n: number, tag: string): void {
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `${tag}${i}.jsonl`), `${JSON.stringify({ role: 'user', content: `tiny transcript ${tag} ${i}` })}\n`);
}

/** Transcript descriptors the process holds now. */
function transcriptFds(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).endsWith('.jsonl')) n++;
    } catch {
      // closed between the listing and the readlink
    }
  }
  return n;
}

/** Sample the transcript descriptors every few ms until stopped; the most seen. */
function sampleFds(pid: number): { stop: () => number } {
  let most = 0;
  const timer = setInterval(() => {
    try {
      most = Math.max(most, transcriptFds(pid));
    } catch {
      // the process is gone
    }
  }, 5);
  return {
    stop: () => {
      clearInterval(timer);
      return most;
    },
  };
}

/** Poll daemon.status until `n` sessions have tokens (bounded). */
async function waitForReadSessions(socket: string, n: number, ms: number): Promise<number> {
  const c = await scope.client(socket);
  const deadline = Date.now() + ms;
  let read = 0;
  while (Date.now() < deadline) {
    read = (await c.status()).sessions.filter((s) => (s.tokens ?? 0) > 0).length;
    if (read >= n) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return read;
}

async function stopsCleanly(d: SpawnedDaemon): Promise<void> {
  const started = Date.now();
  d.proc.kill('SIGTERM');
  expect(await d.exited).toEqual({ code: 0, signal: null });
  expect(Date.now() - started).toBeLessThan(10_000);
}

const emfile = (l: LogLine): boolean => JSON.stringify(l).includes('EMFILE');

describe('many transcripts under a small descriptor limit', () => {
  it('600 transcripts at ulimit -n 256: every one is read, no EMFILE, descriptors stay bounded, a stop does not hang', async () => {
    const t = scope.tempDir('fdburst');
    const N = 600;
    writeTranscripts(t.watch, N, 't');
    const d = await scope.daemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state], {}, { prefix: ['prlimit', '--nofile=256:256', '--'], waitRunning: false });
    const fds = sampleFds(d.proc.pid as number);
    // The documented bound: at ulimit -n 256 the daemon runs (docs/configuration.md, "Socket connections").
    await d.waitForLog((l) => l.msg === 'contextd running', 30_000, 'contextd running');
    const c = await scope.client(t.socket);
    const status = await c.status();
    const read = status.sessions.filter((s) => (s.tokens ?? 0) > 0);
    expect(d.logs.filter(emfile).slice(0, 3)).toEqual([]);
    expect(d.logs.filter((l) => l['code'] === 'INGEST_FAILED').slice(0, 3)).toEqual([]);
    expect(read.length).toBe(N);
    // At most maxOpenFiles transcript descriptors, during the first scan as well as after it.
    expect(fds.stop()).toBeLessThanOrEqual(MAX_OPEN_FILES);
    expect(transcriptFds(d.proc.pid as number)).toBeLessThanOrEqual(MAX_OPEN_FILES);
    await stopsCleanly(d);
  }, 60_000);

  it('600 transcripts appearing at once while running at ulimit -n 256: every one is read, descriptors stay bounded', async () => {
    const t = scope.tempDir('fdburst-live');
    const N = 600;
    const d = await scope.daemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state], {}, { prefix: ['prlimit', '--nofile=256:256', '--'] });
    const fds = sampleFds(d.proc.pid as number);
    writeTranscripts(t.watch, N, 'b');
    expect(await waitForReadSessions(t.socket, N, 30_000)).toBe(N);
    expect(fds.stop()).toBeLessThanOrEqual(MAX_OPEN_FILES);
    expect(d.logs.filter(emfile).slice(0, 3)).toEqual([]);
    expect(d.logs.filter((l) => l['code'] === 'INGEST_FAILED').slice(0, 3)).toEqual([]);
    await stopsCleanly(d);
  }, 60_000);

  it('out of descriptors for a while (EMFILE on open): the reads are retried, and every transcript is read once descriptors are back', async () => {
    const t = scope.tempDir('fdburst-starved');
    const N = 200;
    const d = await scope.daemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state], {}, { prefix: ['prlimit', '--nofile=256:256', '--'] });
    const pid = d.proc.pid as number;
    // The tokenizer loads lazily on the first count, and a load that hits EMFILE fails the batch
    // it counts (src/model/tokens.ts, reported apart): loaded first, so only the tailer is starved.
    writeTranscripts(t.watch, 1, 'first');
    expect(await waitForReadSessions(t.socket, 1, 15_000)).toBe(1);
    // Leave the running daemon a few descriptors only (far fewer than the tailer's 64): the
    // transcripts below hit EMFILE when opened.
    const held = readdirSync(`/proc/${pid}/fd`).length;
    execFileSync('prlimit', [`--pid=${pid}`, `--nofile=${held + 4}:256`]);
    writeTranscripts(t.watch, N, 's');
    await d.waitForLog(emfile, 15_000, 'EMFILE');
    expect(d.logs.some((l) => l.msg === 'out of file descriptors: transcript read again later')).toBe(true);
    // Descriptors come back: nothing is left unread until its next append.
    execFileSync('prlimit', [`--pid=${pid}`, '--nofile=256:256']);
    expect(await waitForReadSessions(t.socket, N + 1, 30_000)).toBe(N + 1);
    expect(d.logs.filter((l) => l.msg === 'tailer error' && l['code'] === 'TAIL_READ_FAILED').slice(0, 3)).toEqual([]);
    await stopsCleanly(d);
  }, 60_000);
});
