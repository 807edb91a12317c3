/**
 * Load: N sessions appended at R lines/s each for D seconds while the daemon plans (a client
 * subscribed to every session applies each plan), and a second client asks `daemon.status`
 * every 100 ms. Reports the daemon's RSS (peak, at the end of the load, and after the sessions
 * went idle and were harvested), the status latency (p50/p99/max), and what the run left in
 * the state folder (`stateMiB`, and file by file: the database and its WAL).
 */
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ContextdClient, type WirePlan } from '../ipc/client.js';
import { demoTranscript } from '../demo/transcript.js';
import { peakRssMiB, round, rssMiB, startDaemonProcess, summarize } from './harness.js';

export interface LoadOptions {
  readonly sessions?: number;
  readonly linesPerSecond?: number;
  readonly durationSeconds?: number;
  /** Seconds to wait after the load for idle harvest and release (default 20). */
  readonly idleSeconds?: number;
  readonly budgetTokens?: number;
  /** Another build's CLI entry (to measure before/after); default this build. */
  readonly cli?: string;
  /**
   * Write every status sample's `load` (RSS, heap, external, queued bytes, sessions in memory,
   * plans in flight, event-loop delay), with its time since the load started, to this file as
   * JSON lines: where the memory is at the peak.
   */
  readonly trace?: string;
}

/** One status sample of a trace: seconds since the load started, and the daemon's `load`. */
type TraceSample = { t: number; phase: 'load' | 'idle'; statusMs: number } & Record<string, unknown>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchLoad(options: LoadOptions = {}): Promise<Record<string, unknown>> {
  const sessions = options.sessions ?? 50;
  const rate = options.linesPerSecond ?? 20;
  const duration = options.durationSeconds ?? 60;
  const idleSeconds = options.idleSeconds ?? 20;
  const budget = options.budgetTokens ?? 64_000;
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-load-'));
  const watch = join(dir, 'sessions');
  mkdirSync(watch);
  const socketPath = join(dir, 's.sock');
  // Enough distinct lines for the whole run, per session (ids made unique per lap).
  const perSession = rate * duration;
  const sources: string[][] = [];
  const files: string[] = [];
  for (let i = 0; i < sessions; i++) {
    const variant = String.fromCharCode(97 + (i % 26));
    const base = demoTranscript({ rounds: 40, variant });
    const out: string[] = [];
    for (let lap = 0; out.length < perSession + 1; lap++) {
      for (const l of base) {
        out.push(JSON.stringify({ ...l, tool_call_id: l.tool_call_id ? `${l.tool_call_id}_${lap}` : undefined, tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_${lap}` })) }));
      }
    }
    sources.push(out);
    const f = join(watch, `load-${i}.jsonl`);
    writeFileSync(f, `${out[0]}\n`);
    files.push(f);
  }
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ logLevel: 'warn', idleTimeoutMs: Math.max(2_000, Math.floor((idleSeconds * 1000) / 3)) }));
  const daemon = await startDaemonProcess(['--config', config, '--watch', watch, '--socket', socketPath, '--state', join(dir, 'state'), '--budget', String(budget)], 120_000, options.cli);
  const pid = daemon.proc.pid as number;
  const statusMs: number[] = [];
  const trace: TraceSample[] = [];
  const rss: number[] = [];
  let plans = 0;
  let applied = 0;
  let rssAtEnd = Number.NaN;
  let rssIdle = Number.NaN;
  let sessionsAfterIdle = Number.NaN;
  try {
    const agent = new ContextdClient({ socketPath, clientInfo: { name: 'bench-agent', version: '1' }, reconnect: false, requestTimeoutMs: 600_000 });
    await agent.connect();
    for (const f of files) {
      for (let tries = 0; ; tries++) {
        try {
          await agent.subscribe({ transcriptPath: f });
          break;
        } catch (err) {
          if (tries > 200) throw err;
          await sleep(50);
        }
      }
    }
    agent.on('compaction.proposed', (plan: WirePlan) => {
      plans++;
      agent.ack({ planId: plan.planId, applied: true }).then(
        () => applied++,
        () => undefined, // superseded or expired meanwhile: the next plan follows
      );
    });
    // A stalled daemon is what is measured: wait as long as it takes (a stall is a sample).
    const watcher = new ContextdClient({ socketPath, clientInfo: { name: 'bench-status', version: '1' }, reconnect: false, requestTimeoutMs: 600_000 });
    await watcher.connect();
    let running = true;
    let tracing = true;
    let phase: TraceSample['phase'] = 'load';
    let t0Load = performance.now();
    const backlogMax = { queuedBytes: 0, sessionsInMemory: 0, plansInFlight: 0 };
    let loopDelay: unknown;
    const sample = async (): Promise<number> => {
      const t0 = performance.now();
      const st = await watcher.status();
      const ms = performance.now() - t0;
      const load = st.load;
      if (load) {
        if (phase === 'load') {
          backlogMax.queuedBytes = Math.max(backlogMax.queuedBytes, load.queuedBytes);
          backlogMax.sessionsInMemory = Math.max(backlogMax.sessionsInMemory, load.sessionsInMemory);
          backlogMax.plansInFlight = Math.max(backlogMax.plansInFlight, load.plansInFlight);
          loopDelay = load.eventLoopDelayMs;
        }
        if (options.trace !== undefined) {
          // How far the models are over their budget (plans behind) beside what the daemon holds.
          const tokens = st.sessions.map((x) => x.tokens ?? 0);
          const overBudget = st.sessions.filter((x) => x.headroom < 0).length;
          trace.push({ t: Math.round(t0 - t0Load) / 1000, phase, statusMs: Math.round(ms * 10) / 10, heldTokens: (st as { heldTokens?: number }).heldTokens, maxSessionTokens: Math.max(0, ...tokens), overBudget, ...load });
        }
      }
      return ms;
    };
    const statusLoop = (async () => {
      while (running) {
        statusMs.push(await sample());
        await sleep(100);
      }
    })();
    // The trace goes on through the idle wait (not counted in statusMs): does memory come back?
    const idleLoop = (async () => {
      await statusLoop;
      while (tracing && options.trace !== undefined) {
        await sample();
        await sleep(100);
      }
    })();
    const rssTimer = setInterval(() => rss.push(rssMiB(pid)), 1_000);
    const started = performance.now();
    t0Load = started;
    let written = 1;
    // One tick every 1000/rate ms appends one line to every session.
    while (written <= perSession) {
      for (let i = 0; i < sessions; i++) appendFileSync(files[i] as string, `${sources[i]?.[written] ?? ''}\n`);
      written++;
      const due = started + (written * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
    const loadSeconds = (performance.now() - started) / 1000;
    running = false;
    phase = 'idle';
    await statusLoop;
    rssAtEnd = rssMiB(pid);
    clearInterval(rssTimer);
    await agent.close();
    // Idle: nobody subscribed, no appends; idle harvest frees the session models.
    await sleep(idleSeconds * 1000);
    tracing = false;
    await idleLoop;
    rssIdle = rssMiB(pid);
    sessionsAfterIdle = (await watcher.status()).sessions.length;
    await watcher.close();
    const peak = peakRssMiB(pid);
    // What the run left on disk: the state folder (SQLite database and its WAL) while the daemon runs.
    const stateFiles = fileSizes(join(dir, 'state'));
    const mib = (bytes: number): number => round(bytes / 1048576, 1);
    return {
      stateMiB: mib(Object.values(stateFiles).reduce((a, b) => a + b, 0)),
      stateFilesMiB: Object.fromEntries(Object.entries(stateFiles).map(([name, bytes]) => [name, mib(bytes)])),
      sessions,
      linesPerSecondPerSession: rate,
      durationSeconds: duration,
      loadSeconds: Math.round(loadSeconds * 10) / 10,
      budgetTokens: budget,
      plansPushed: plans,
      plansApplied: applied,
      statusMs: summarize(statusMs),
      rssMiB: { peak, max1s: Math.max(...rss), atEndOfLoad: rssAtEnd, afterIdle: rssIdle, idleSeconds },
      sessionsInMemoryAfterIdle: sessionsAfterIdle,
      // Highest backlog seen during the load, and the daemon's event-loop delay at its end (absent from builds without daemon.status `load`).
      ...(loopDelay !== undefined ? { backlogMax: { ...backlogMax, queuedMiB: Math.round(backlogMax.queuedBytes / 104857.6) / 10 }, eventLoopDelayMs: loopDelay } : {}),
      ...(options.trace !== undefined ? { trace: options.trace, traceSamples: trace.length } : {}),
    };
  } finally {
    if (options.trace !== undefined) writeFileSync(options.trace, trace.map((x) => JSON.stringify(x)).join('\n') + '\n');
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Bytes of each regular file in `dir` and below, by its path under `dir`. */
function fileSizes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out[relative(dir, join(e.parentPath, e.name))] = statSync(join(e.parentPath, e.name)).size;
  }
  return out;
}
