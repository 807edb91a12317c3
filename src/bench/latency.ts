/**
 * Append → plan-pushed latency of the real daemon process at 1, 10 and 100 concurrent live
 * sessions, and its RSS with 100 sessions × ~200k tokens.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContextdClient, type WirePlan } from '../ipc/client.js';
import { demoTranscript, demoTranscriptJsonl } from '../demo/transcript.js';
import { rssMiB, startDaemonProcess, summarize } from './harness.js';

export interface LatencyOptions {
  readonly concurrency?: readonly number[];
  /** Appends measured per session at each concurrency level. */
  readonly appendsPerSession?: number;
  /** Sessions × tokens for the RSS figure. */
  readonly rssSessions?: number;
  readonly rssRounds?: number;
}

function waitForPlan(client: ContextdClient, sessionId: string, timeoutMs: number): Promise<WirePlan> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('compaction.proposed', on);
      reject(new Error(`no plan for ${sessionId} within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (plan: WirePlan) => {
      if (plan.sessionId !== sessionId) return;
      clearTimeout(timer);
      client.off('compaction.proposed', on);
      resolve(plan);
    };
    client.on('compaction.proposed', on);
  });
}

async function latencyAt(sessionsCount: number, appends: number): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-lat-'));
  const watch = join(dir, 'sessions');
  mkdirSync(watch);
  // ~1.8k tokens a round: 11 rounds ≈ 20k tokens ≈ 63% of the budget, past the soft watermark,
  // so every append that adds cruft is answered with a plan.
  const budget = 32_000;
  const files: string[] = [];
  for (let i = 0; i < sessionsCount; i++) {
    const f = join(watch, `bench-${i}.jsonl`);
    writeFileSync(f, demoTranscriptJsonl({ rounds: 11, variant: String.fromCharCode(97 + (i % 26)) }));
    files.push(f);
  }
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ minPlanIntervalMs: 0, logLevel: 'warn' }));
  const daemon = await startDaemonProcess(['--config', config, '--watch', watch, '--socket', join(dir, 's.sock'), '--state', join(dir, 'state'), '--budget', String(budget)]);
  const samples: number[] = [];
  let timeouts = 0;
  try {
    const extra = demoTranscript({ rounds: 3, variant: 'z' }).filter((l) => l.role === 'tool' || l.tool_calls);
    const clients = await Promise.all(
      files.map(async (f) => {
        const c = new ContextdClient({ socketPath: join(dir, 's.sock'), clientInfo: { name: 'bench', version: '1' }, reconnect: false });
        await c.connect();
        const { sessionId } = await c.subscribe({ transcriptPath: f });
        return { c, f, sessionId };
      }),
    );
    for (let k = 0; k < appends; k++) {
      await Promise.all(
        clients.map(async ({ c, f, sessionId }) => {
          // One tool call + its (large, repetitive) result, written as one append.
          const pairs = Math.floor(extra.length / 2);
          const at = (k % pairs) * 2;
          const pair = extra.slice(at, at + 2);
          const text = pair.map((l) => JSON.stringify({ ...l, tool_call_id: l.tool_call_id ? `${l.tool_call_id}_${k}` : undefined, tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_${k}` })) })).join('\n') + '\n';
          const got = waitForPlan(c, sessionId, 15_000);
          got.catch(() => undefined); // handled below; never an unhandled rejection
          const t0 = performance.now();
          appendFileSync(f, text);
          try {
            const plan = await got;
            samples.push(performance.now() - t0);
            await c.ack({ planId: plan.planId, applied: false, reason: 'bench: measuring latency only' });
          } catch {
            timeouts++;
          }
        }),
      );
    }
    await Promise.all(clients.map(({ c }) => c.close()));
  } finally {
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { sessions: sessionsCount, budgetTokens: budget, appendToPlanMs: summarize(samples), timeouts };
}

async function rssAt(sessionsCount: number, rounds: number): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-rss-'));
  const watch = join(dir, 'sessions');
  mkdirSync(watch);
  const text = demoTranscriptJsonl({ rounds });
  for (let i = 0; i < sessionsCount; i++) writeFileSync(join(watch, `rss-${i}.jsonl`), text);
  const socket = join(dir, 's.sock');
  const t0 = performance.now();
  const daemon = await startDaemonProcess(['--watch', watch, '--socket', socket, '--state', join(dir, 'state'), '--budget', '1000000'], 600_000);
  try {
    const c = new ContextdClient({ socketPath: socket, clientInfo: { name: 'bench', version: '1' }, reconnect: false, requestTimeoutMs: 120_000 });
    await c.connect();
    const status = await c.status();
    const sessions = status.sessions as { tokens: number }[];
    const tokens = sessions.reduce((a, s) => a + s.tokens, 0);
    await c.close();
    return {
      sessions: sessions.length,
      tokensPerSession: Math.round(tokens / Math.max(1, sessions.length)),
      startupSeconds: Math.round((performance.now() - t0) / 100) / 10,
      rssMiB: rssMiB(daemon.proc.pid as number),
    };
  } finally {
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Run the latency scenario and return its JSON figures. */
export async function benchLatency(options: LatencyOptions = {}): Promise<Record<string, unknown>> {
  const levels = options.concurrency ?? [1, 10, 100];
  const appends = options.appendsPerSession ?? 10;
  const latency = [];
  for (const n of levels) latency.push(await latencyAt(n, n >= 100 ? Math.max(3, Math.floor(appends / 3)) : appends));
  const rss = await rssAt(options.rssSessions ?? 100, options.rssRounds ?? 110);
  return { scenario: 'latency', latency, rss };
}
