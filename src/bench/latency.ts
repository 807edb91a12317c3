/**
 * Append → plan-pushed latency of the real daemon process at 1, 10 and 100 concurrent live
 * sessions, and its RSS with 100 sessions × ~200k tokens. Each level's daemon first runs an
 * untimed JIT warm-up on sessions of its own (`warmUpAppendToPlanMs`), so the figures are
 * those of a daemon that has been running, not of V8 compiling it.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContextdClient, RpcError, RpcErrorCode, type WirePlan } from '../ipc/client.js';
import type { SubscribeResult } from '../ipc/results.js';
import { demoTranscript, demoTranscriptJsonl, type DemoLine } from '../demo/transcript.js';
import { createTokenCounter } from '../model/tokens.js';
import { cpuSeconds, round, rssMiB, startDaemonProcess, summarize } from './harness.js';
import { generatedTranscript } from './transcripts.js';
import { seededRandom } from '../util/random.js';

export interface LatencyOptions {
  readonly concurrency?: readonly number[];
  /** Appends measured per session at each concurrency level. */
  readonly appendsPerSession?: number;
  /** Appends per session in the staggered phase (default 10). */
  readonly staggeredAppends?: number;
  /** Sessions × tokens for the RSS figure. */
  readonly rssSessions?: number;
  readonly rssRounds?: number;
  /** Only the append → plan levels: no RSS or limits part (profiling one level). */
  readonly latencyOnly?: boolean;
  /** Only the RSS part: no append → plan levels, no limits (measuring memory or start-up). */
  readonly rssOnly?: boolean;
  /** Another build's dist/src/cli/main.js to run as the daemon (before/after with the same client). */
  readonly cli?: string;
}

/**
 * Subscribe to the session of transcript `f` once the daemon has read it (a file written while
 * it runs is read within milliseconds; until then the subscription is refused), within 30 s.
 */
async function subscribeWhenRead(c: ContextdClient, f: string): Promise<SubscribeResult> {
  const deadline = performance.now() + 30_000;
  for (;;) {
    try {
      return await c.subscribe({ transcriptPath: f });
    } catch (err) {
      // only "no live session reads it" (yet) is worth asking again
      if (!(err instanceof RpcError && err.code === RpcErrorCode.UNKNOWN_SESSION) || performance.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** A plan's count of the context it was made from (`Plan.tokensBefore`, sent by every build since the IPC had plans). */
function planTokens(plan: WirePlan): number {
  const n = (plan as { tokensBefore?: unknown }).tokensBefore;
  if (typeof n !== 'number') throw new Error(`bench latency: plan ${plan.planId} has no tokensBefore, so it cannot be matched to an append`);
  return n;
}

/**
 * The first plan for `sessionId` made from more than `afterTokens` tokens: one made from the
 * context an append grew, not one made before it (the plan a subscription pushes at once, or a
 * plan for an earlier append arriving late).
 */
function waitForPlan(client: ContextdClient, sessionId: string, timeoutMs: number, afterTokens: number): Promise<WirePlan> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('compaction.proposed', on);
      reject(new Error(`no plan for ${sessionId} within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (plan: WirePlan) => {
      if (plan.sessionId !== sessionId) return;
      let tokens: number;
      try {
        tokens = planTokens(plan);
      } catch (err) {
        clearTimeout(timer);
        client.off('compaction.proposed', on);
        reject(err as Error);
        return;
      }
      if (tokens <= afterTokens) return;
      clearTimeout(timer);
      client.off('compaction.proposed', on);
      resolve(plan);
    };
    client.on('compaction.proposed', on);
  });
}

/**
 * Round `k`'s append for the session marked `mark`: one tool call and its (large, repetitive)
 * result from `extra`, ids unique to the round, as one write. The mark makes every session's
 * (and the warm-up's) texts its own: token counts and derived data are cached by text, so
 * sessions appending the same text would each find the first one's work done, which live
 * agents' sessions never do.
 */
export function roundAppend(extra: readonly DemoLine[], k: number, mark: string): string {
  const pairs = Math.floor(extra.length / 2);
  const at = (k % pairs) * 2;
  const pair = extra.slice(at, at + 2);
  const tag = `${mark} round ${k}`;
  return (
    pair
      .map((l) =>
        JSON.stringify({
          ...l,
          ...(l.role === 'tool' ? { content: `(${tag})\n${l.content}` } : {}),
          tool_call_id: l.tool_call_id ? `${l.tool_call_id}_${k}` : undefined,
          tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_${k}`, function: { ...t.function, arguments: markedArguments(t.function.arguments, tag) } })),
        }),
      )
      .join('\n') + '\n'
  );
}

/** A tool call's arguments with the append's mark as a field (or a prefix, when they are not a JSON object). */
function markedArguments(args: string, tag: string): string {
  try {
    const v = JSON.parse(args) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return JSON.stringify({ ...v, bench_append: tag });
  } catch {
    // not JSON: marked below
  }
  return `(${tag}) ${args}`;
}

/**
 * Mean gap between one session's appends in the staggered phase (`staggeredAppendToPlanMs`).
 * Real agents write their transcripts less often: in the Claude Code and Codex transcripts of
 * the shared corpus (8 sessions, 982 gaps between writes ≥ 50 ms apart) the median gap is
 * 2.0 s and the mean 10 s, so a session appending every second on average is a fast agent.
 */
export const STAGGERED_MEAN_GAP_MS = 1_000;

/** Samples the staggered phase takes at least, at any level (`latencyAt`). */
const STAGGERED_MIN_SAMPLES = 30;

/**
 * Exponential gaps (a Poisson process per session) with mean `meanMs`, seeded: the same
 * schedule on every run and for both builds of a before/after.
 */
export function staggeredGaps(seed: number, count: number, meanMs: number): number[] {
  const r = seededRandom(seed);
  return Array.from({ length: count }, () => -Math.log(1 - r()) * meanMs);
}

/** Sessions and rounds of the untimed JIT warm-up before each level's measured appends. */
const WARM_SESSIONS = 10;
export const WARM_ROUNDS = 10;

/** The tool calls and results the appends are made of (`roundAppend`). */
export function appendSource(): DemoLine[] {
  return demoTranscript({ rounds: 3, variant: 'z' }).filter((l) => l.role === 'tool' || l.tool_calls);
}

interface Subscribed {
  readonly c: ContextdClient;
  readonly f: string;
  readonly sessionId: string;
  /** Marks this session's appended texts as its own (`roundAppend`). */
  readonly mark: string;
  /** The tokens the last plan taken was made from (at first: the session's own count when subscribed). */
  tokens: number;
  /** An append of it went unanswered: its later plans cannot be told apart, so it appends no more. */
  stopped: boolean;
  /** The first plan pushed to its client: the one the subscription pushes at once. */
  readonly initial: Promise<WirePlan>;
}

/** How long the plans a subscription pushes at once are waited for (`settle`) before the appends start. */
const INITIAL_PLAN_WAIT_MS = 30_000;

/** The mark of session `i`'s appended texts in a phase of the bench (`roundAppend`): its own. */
export function sessionMark(phase: string, i: number): string {
  return `${phase} s${i}`;
}

async function latencyAt(sessionsCount: number, appends: number, staggered: number, cli?: string): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-lat-'));
  const watch = join(dir, 'sessions');
  mkdirSync(watch);
  // ~1.8k tokens a round: 11 rounds ≈ 20k tokens ≈ 63% of the budget, past the soft watermark,
  // so every append that adds cruft is answered with a plan.
  const budget = 32_000;
  /**
   * `count` transcripts named `<prefix>-<i>.jsonl`, each a demo session of 11 rounds, each
   * written whole beside the folder and moved in: a daemon already running reads it at once,
   * never half written.
   */
  const writeSessions = (prefix: string, count: number): string[] =>
    Array.from({ length: count }, (_, i) => {
      const f = join(watch, `${prefix}-${i}.jsonl`);
      const staged = join(dir, `${prefix}-${i}.jsonl`);
      writeFileSync(staged, demoTranscriptJsonl({ rounds: 11, variant: String.fromCharCode(97 + (i % 26)) }));
      renameSync(staged, f);
      return f;
    });
  const files = writeSessions('bench', sessionsCount);
  const warmFiles = writeSessions('warm', WARM_SESSIONS);
  // Staggered: with one session, the phase is repeated on fresh sessions until it has
  // STAGGERED_MIN_SAMPLES, so every level's sessions grow alike. Written when the phase starts:
  // read at the daemon's start, they would add a level's worth of sessions to the memory budget
  // (5 M tokens by default) while the others are measured, and the daemon would release and
  // rebuild sessions in the middle of the measured rounds.
  const reps = Math.max(1, Math.ceil(STAGGERED_MIN_SAMPLES / (sessionsCount * staggered)));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ minPlanIntervalMs: 0, logLevel: 'warn' }));
  const daemon = await startDaemonProcess(['--config', config, '--watch', watch, '--socket', join(dir, 's.sock'), '--state', join(dir, 'state'), '--budget', String(budget)], undefined, cli);
  const samples: number[] = [];
  const warmUp: number[] = [];
  const statusMs: number[] = [];
  /**
   * Per phase (measured, warm-up): appends answered by no plan in time (`timeouts`), and acks
   * refused (PLAN_EXPIRED: the plan taken for an append was superseded by a newer one before the ack).
   */
  const measured = { timeouts: 0, acksRefused: 0 };
  const staggeredSamples: number[] = [];
  const staggeredCounts = { timeouts: 0, acksRefused: 0 };
  const warmUpCounts = { timeouts: 0, acksRefused: 0 };
  let initialPlansMissing = 0;
  let loading = true;
  let cpuMsPerAppend: { daemon: number; daemonMainThread: number; bench: number } | undefined;
  const prober = new ContextdClient({ socketPath: join(dir, 's.sock'), clientInfo: { name: 'bench-status', version: '1' }, reconnect: false, requestTimeoutMs: 60_000 });
  try {
    await prober.connect();
    const extra = appendSource();
    /** A client per transcript, subscribed; the texts each appends are marked as its own (`sessionMark`). */
    const subscribeAll = (paths: readonly string[], phase: string): Promise<Subscribed[]> =>
      Promise.all(
        paths.map(async (f, i) => {
          const c = new ContextdClient({ socketPath: join(dir, 's.sock'), clientInfo: { name: 'bench', version: '1' }, reconnect: false });
          await c.connect();
          // listening before the subscription: its plan can come right after the reply
          const initial = new Promise<WirePlan>((resolve) => c.once('compaction.proposed', resolve));
          const { sessionId, headroom } = await subscribeWhenRead(c, f);
          return { c, f, sessionId, mark: sessionMark(phase, i), tokens: headroom.countedTokens ?? headroom.tokens, stopped: false, initial };
        }),
      );
    /** Decline `plan` (the bench only measures when plans come; it applies none). */
    const decline = (s: Subscribed, plan: WirePlan): Promise<unknown> => s.c.ack({ planId: plan.planId, applied: false, reason: 'bench: measuring latency only' });
    /**
     * Waits for the plans the subscriptions push at once (each session's first, cold plan) and
     * declines them, so the measured appends do not queue behind a whole level's cold plans:
     * live agents' sessions do not all start in the same millisecond. Those not pushed within
     * INITIAL_PLAN_WAIT_MS are counted (`initialPlansMissing`).
     */
    const settle = async (list: readonly Subscribed[]): Promise<void> => {
      await Promise.all(
        list.map(async (s) => {
          let timer: NodeJS.Timeout | undefined;
          const plan = await Promise.race([s.initial, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), INITIAL_PLAN_WAIT_MS)))]);
          clearTimeout(timer);
          if (!plan) {
            initialPlansMissing++;
            return;
          }
          // made from the whole transcript, maybe after the subscription counted part of it
          s.tokens = Math.max(s.tokens, planTokens(plan));
          await decline(s, plan).catch(() => undefined);
        }),
      );
    };
    /**
     * One session's append of round `k`: the time until the plan made from it is pushed goes to
     * `into`, then the plan is declined. Plans made before it (the one a subscription pushes at
     * once) are passed over: they were made from fewer tokens.
     */
    const appendOnce = async (s: Subscribed, k: number, into: number[], counts: { timeouts: number; acksRefused: number }): Promise<void> => {
      if (s.stopped) return;
      const text = roundAppend(extra, k, s.mark);
      const got = waitForPlan(s.c, s.sessionId, 15_000, s.tokens);
      got.catch(() => undefined); // handled below; never an unhandled rejection
      const t0 = performance.now();
      appendFileSync(s.f, text);
      let plan: WirePlan;
      try {
        plan = await got;
      } catch {
        counts.timeouts++;
        s.stopped = true;
        return;
      }
      into.push(performance.now() - t0);
      s.tokens = planTokens(plan);
      // A plan superseded before this ack is refused (PLAN_EXPIRED): counted, not a missing push.
      await decline(s, plan).catch(() => counts.acksRefused++);
    };
    /** Round `k`: every client appends one tool call and its result at once and waits for its plan, then declines it. */
    const appendRound = (list: readonly Subscribed[], k: number, into: number[], counts: { timeouts: number; acksRefused: number }): Promise<void> =>
      Promise.all(list.map((s) => appendOnce(s, k, into, counts))).then(() => undefined);
    // JIT warm-up, untimed in the figures: a daemon runs for hours, and V8 compiles the append,
    // plan and ack paths over its first few hundred plans (TurboFan was still compiling planner
    // functions on another core through a cold run's last round). Separate sessions, so the
    // measured ones start as large as without it; their own latencies are reported apart.
    const warmClients = await subscribeAll(warmFiles, 'warm-up');
    await settle(warmClients);
    for (let k = 0; k < WARM_ROUNDS; k++) await appendRound(warmClients, k, warmUp, warmUpCounts);
    await Promise.all(warmClients.map(({ c }) => c.close()));
    const clients = await subscribeAll(files, 'at once');
    await settle(clients);
    // daemon.status asked every 20 ms by another client while the sessions append and plan.
    const probing = (async () => {
      while (loading) {
        const t0 = performance.now();
        await prober.status();
        statusMs.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    // CPU of both processes over the appends (acks and status probes included): robust to
    // other load, unlike the latencies.
    const pid = daemon.proc.pid as number;
    const daemonCpu0 = cpuSeconds(pid);
    const loopCpu0 = cpuSeconds(pid, pid);
    const benchCpu0 = process.cpuUsage();
    for (let k = 0; k < appends; k++) await appendRound(clients, k, samples, measured);
    const appended = sessionsCount * appends;
    const benchCpu = process.cpuUsage(benchCpu0);
    cpuMsPerAppend = {
      daemon: round(((cpuSeconds(pid) - daemonCpu0) * 1000) / appended, 2),
      // the daemon's main thread alone: what holds the event loop (and so the pushes) back
      daemonMainThread: round(((cpuSeconds(pid, pid) - loopCpu0) * 1000) / appended, 2),
      bench: round((benchCpu.user + benchCpu.system) / 1000 / appended, 2),
    };
    loading = false;
    await probing;
    await Promise.all(clients.map(({ c }) => c.close()));
    // Staggered: sessions of their own, as large as the ones above were at their start, each
    // appending on a clock of its own (seeded exponential gaps with mean STAGGERED_MEAN_GAP_MS,
    // counted from its previous plan's ack), as live agents do.
    for (let r = 0; r < reps; r++) {
      const list = await subscribeAll(writeSessions(`staggered-${r}`, sessionsCount), `staggered ${r}`);
      await settle(list);
      await Promise.all(
        list.map(async (s, i) => {
          const gaps = staggeredGaps(0x5eed + r * 1_000 + i, staggered, STAGGERED_MEAN_GAP_MS);
          for (let j = 0; j < staggered; j++) {
            await new Promise((resolve) => setTimeout(resolve, gaps[j]));
            await appendOnce(s, j, staggeredSamples, staggeredCounts);
          }
        }),
      );
      await Promise.all(list.map(({ c }) => c.close()));
    }
  } finally {
    loading = false;
    await prober.close();
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { sessions: sessionsCount, budgetTokens: budget, appendToPlanMs: summarize(samples), statusDuringLoadMs: summarize(statusMs), cpuMsPerAppend, ...measured, staggeredAppendToPlanMs: summarize(staggeredSamples), staggeredMeanGapMs: STAGGERED_MEAN_GAP_MS, staggeredTimeouts: staggeredCounts.timeouts, staggeredAcksRefused: staggeredCounts.acksRefused, initialPlansMissing, warmUpAppendToPlanMs: summarize(warmUp), warmUpTimeouts: warmUpCounts.timeouts, warmUpAcksRefused: warmUpCounts.acksRefused };
}

/** What the resident memory of a process consists of, in MiB, from /proc/PID/smaps_rollup (Linux). */
function rssParts(pid: number): Record<string, number> {
  const parts: Record<string, number> = {};
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    for (const [field, name] of [['Anonymous', 'anonymous'], ['Rss', 'rss'], ['Shared_Clean', 'sharedClean'], ['Private_Clean', 'privateClean']] as const) {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
      if (m) parts[name] = round(Number(m[1]) / 1024, 1);
    }
  } catch {
    // no smaps_rollup (not Linux, or an old kernel): the VmRSS figure stands alone
  }
  return parts;
}

const MIB = 1024 * 1024;

/** The daemon's own account of its memory (daemon.status `load`), in MiB. */
function loadParts(load: unknown): Record<string, number> {
  const l = (load ?? {}) as Record<string, unknown>;
  const out: Record<string, number> = {};
  for (const [field, name] of [['heapUsedBytes', 'heapUsed'], ['heapTotalBytes', 'heapTotal'], ['externalBytes', 'external'], ['arrayBuffersBytes', 'arrayBuffers']] as const) {
    if (typeof l[field] === 'number') out[name] = round((l[field] as number) / MIB, 1);
  }
  if (typeof l['sessionsInMemory'] === 'number') out['sessionsInMemory'] = l['sessionsInMemory'] as number;
  return out;
}

async function rssAt(sessionsCount: number, rounds: number, cli?: string): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-rss-'));
  const watch = join(dir, 'sessions');
  mkdirSync(watch);
  // Every message its own text: repeated messages would let the token cache serve a cold start as well as a restart.
  const base = demoTranscript({ rounds });
  for (let i = 0; i < sessionsCount; i++) writeFileSync(join(watch, `rss-${i}.jsonl`), generatedTranscript(i, rounds, base));
  const socket = join(dir, 's.sock');
  const args = ['--watch', watch, '--socket', socket, '--state', join(dir, 'state'), '--budget', '1000000'];
  /** Start the daemon, wait for its first status (every transcript read), measure. */
  const startOnce = async (): Promise<{ seconds: number; cpu: number; sessions: number; tokens: number; rss: number; parts: Record<string, number> }> => {
    const t0 = performance.now();
    const daemon = await startDaemonProcess(args, 600_000, cli);
    try {
      const c = new ContextdClient({ socketPath: socket, clientInfo: { name: 'bench', version: '1' }, reconnect: false, requestTimeoutMs: 120_000 });
      await c.connect();
      const status = await c.status();
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds(daemon.proc.pid as number);
      const sessions = status.sessions as { tokens: number }[];
      await c.close();
      const pid = daemon.proc.pid as number;
      const rss = rssMiB(pid);
      const parts = { ...rssParts(pid), ...loadParts(status.load), heldMTokens: round(Number(status.heldTokens ?? 0) / 1e6, 2) };
      return { seconds, cpu, sessions: sessions.length, tokens: sessions.reduce((a, s) => a + s.tokens, 0), rss, parts };
    } finally {
      await daemon.stop();
    }
  };
  try {
    const cold = await startOnce();
    // Same transcripts, same state directory: what a restart (or a crash and respawn) costs.
    const warm = await startOnce();
    return {
      sessions: cold.sessions,
      tokensPerSession: Math.round(cold.tokens / Math.max(1, cold.sessions)),
      startupSeconds: round(cold.seconds, 1),
      restartSeconds: round(warm.seconds, 1),
      restartShareOfStartup: round(warm.seconds / cold.seconds, 2),
      // CPU used by the daemon until its first status: the same comparison, unmoved by other load.
      startupCpuSeconds: cold.cpu,
      restartCpuSeconds: warm.cpu,
      restartShareOfStartupCpu: round(warm.cpu / cold.cpu, 2),
      rssMiB: cold.rss,
      rssAfterRestartMiB: warm.rss,
      restartTokensMatch: warm.tokens === cold.tokens,
      // What the RSS consists of at the reading (MiB): smaps_rollup's anonymous and file-backed
      // parts, and the daemon's own heap and buffer figures from the same status.
      rssParts: cold.parts,
      rssAfterRestartParts: warm.parts,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The floor under append -> model: how long a raw fs.watch event takes to arrive after an append. */
async function fsEventMs(samples = 50): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-fs-'));
  const file = join(dir, 'f.jsonl');
  writeFileSync(file, '');
  const out: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const w = watch(file);
      const got = new Promise<void>((resolve) => w.once('change', () => resolve()));
      const t0 = performance.now();
      appendFileSync(file, '{"role":"user","content":"x"}\n');
      await got;
      out.push(performance.now() - t0);
      w.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return summarize(out);
}

/** The tokenizer's own speed on one core: the ceiling of a cold start's ingest. */
function tokenizerTokensPerSec(): number {
  const counter = createTokenCounter();
  const texts = demoTranscript({ rounds: 40 }).map((l) => l.content);
  counter.count('load the tables'); // they load on the first count: not part of the speed
  let tokens = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 1_000) for (const t of texts) tokens += counter.count(t);
  return Math.round(tokens / ((performance.now() - t0) / 1000));
}

/** Run the latency scenario and return its JSON figures. */
export async function benchLatency(options: LatencyOptions = {}): Promise<Record<string, unknown>> {
  if (options.rssOnly) return { scenario: 'latency', rss: await rssAt(options.rssSessions ?? 100, options.rssRounds ?? 110, options.cli) };
  const levels = options.concurrency ?? [1, 10, 100];
  const appends = options.appendsPerSession ?? 10;
  const latency = [];
  const staggered = Math.max(1, Math.floor(options.staggeredAppends ?? 10));
  for (const n of levels) latency.push(await latencyAt(n, n >= 100 ? Math.max(3, Math.floor(appends / 3)) : appends, staggered, options.cli));
  if (options.latencyOnly) return { scenario: 'latency', latency };
  const rss = await rssAt(options.rssSessions ?? 100, options.rssRounds ?? 110, options.cli);
  const busiest = latency[latency.length - 1] as { statusDuringLoadMs?: unknown } | undefined;
  const limits = { fsEventMs: await fsEventMs(), tokenizerTokensPerSec: tokenizerTokensPerSec() };
  return { scenario: 'latency', latency, statusDuringLoadMs: busiest?.statusDuringLoadMs, rss, limits };
}
