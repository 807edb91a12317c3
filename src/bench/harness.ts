/** Shared helpers of the benchmark scenarios: percentiles, RSS, timing. */
import { readFileSync } from 'node:fs';

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

export function summarize(samples: readonly number[]): { n: number; p50: number; p99: number; max: number; mean: number } {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { n: s.length, p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s[s.length - 1] ?? Number.NaN), mean: round(mean) };
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Resident set size of a process in MiB, from /proc (Linux). */
export function rssMiB(pid: number = process.pid): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? round(Number(m[1]) / 1024, 1) : Number.NaN;
}

/**
 * CPU seconds (user + system) a process has used so far, from /proc (Linux): robust to other load.
 * With `thread`, only that thread's (a process's main thread has the process's id): the event
 * loop's share, without V8's compiler and GC helpers or worker threads.
 */
export function cpuSeconds(pid: number = process.pid, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return round((Number(fields[11]) + Number(fields[12])) / 100, 2);
}

/**
 * CPU nanoseconds the calling process's main thread has run so far, from
 * /proc/self/task/<pid>/schedstat (Linux; undefined elsewhere): unlike `process.cpuUsage()` it
 * leaves out V8's helper threads (parallel GC, compiler). The kernel may bring a running
 * thread's figure up to date only at its next tick, so one reading can lag by a few
 * milliseconds: use it for means over many runs.
 */
export function mainThreadCpuNs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

/** Peak resident set size of a process in MiB (VmHWM). */
export function peakRssMiB(pid: number = process.pid): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? round(Number(m[1]) / 1024, 1) : Number.NaN;
}

export function nowMs(): number {
  return performance.now();
}

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync as exists } from 'node:fs';

/** The built CLI entry (dist/src/cli/main.js beside the compiled bench, or the build when run from source). */
export function cliPath(): string {
  for (const rel of ['../cli/main.js', '../../dist/src/cli/main.js', '../dist/src/cli/main.js']) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    if (exists(p)) return p;
  }
  throw new Error('bench: dist/src/cli/main.js not found; run `npm run build` first');
}

/**
 * Node flags for the benches' daemon process, from CONTEXTD_BENCH_NODE_FLAGS (space-separated),
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the daemon under a bench's load.
 */
function daemonNodeFlags(): string[] {
  return (process.env.CONTEXTD_BENCH_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
}

/** Spawn `contextd daemon ARGS` and resolve once it logs that it is running. */
export async function startDaemonProcess(args: readonly string[], timeoutMs = 120_000, cli: string = cliPath()): Promise<{ proc: ChildProcess; stop: () => Promise<void> }> {
  const proc = spawn(process.execPath, [...daemonNodeFlags(), cli, 'daemon', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CONTEXTD_LOG_LEVEL: 'info' } });
  // Only the log's tail is kept (for the error of a daemon that fails to start), and only the
  // new text is searched: once running, the daemon logs every plan, and scanning a growing
  // buffer on each chunk cost the bench more CPU than the daemon spent planning.
  const READY = '"msg":"contextd running"';
  const TAIL = 4_000;
  let buf = '';
  let running = false;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not start in ${timeoutMs} ms: ${buf.slice(-2000)}`)), timeoutMs);
    proc.stderr?.on('data', (d: Buffer) => {
      if (running) return;
      const from = Math.max(0, buf.length - READY.length);
      buf += d.toString();
      if (buf.includes(READY, from)) {
        running = true;
        clearTimeout(timer);
        resolve();
      }
      if (buf.length > 2 * TAIL) buf = buf.slice(-TAIL);
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`daemon exited with ${code}: ${buf.slice(-2000)}`));
    });
  });
  proc.stderr?.resume();
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
  return { proc, stop };
}
