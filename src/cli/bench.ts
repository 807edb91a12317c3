import type { Command } from 'commander';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { printJson, usageError } from './output.js';
import { peakRssMiB } from '../bench/harness.js';

const SCENARIOS = ['ingest', 'latency', 'plan', 'memory', 'retention', 'warm', 'load', 'hooks', 'proxy', 'all'] as const;
type Scenario = (typeof SCENARIOS)[number];

/** Scenarios that read a folder of real transcripts (latency generates its own load). */
const NEEDS_CORPUS: ReadonlySet<Scenario> = new Set(['ingest', 'retention', 'warm', 'all']);

/** The transcript folder: `--corpus`, else `CONTEXTD_CORPUS`; undefined when neither names one. */
function corpusFolder(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = flag ?? env['CONTEXTD_CORPUS'];
  return value === undefined || value.trim() === '' ? undefined : resolve(value);
}

interface LoadFlags {
  duration?: string;
  sessions?: string;
  rate?: string;
  idle?: string;
  cli?: string;
  trace?: string;
  levels?: string;
  rssOnly?: boolean;
}

function positive(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw usageError(`--${name} must be a positive number (got "${v}")`);
  return n;
}

async function run(scenario: Exclude<Scenario, 'all'>, corpusDir: string, load: LoadFlags = {}, locomoDir?: string): Promise<Record<string, unknown>> {
  switch (scenario) {
    case 'load': {
      const { benchLoad } = await import('../bench/load.js');
      const sessions = positive('sessions', load.sessions);
      const linesPerSecond = positive('rate', load.rate);
      const durationSeconds = positive('duration', load.duration);
      const idleSeconds = positive('idle', load.idle);
      return benchLoad({
        ...(sessions !== undefined ? { sessions } : {}),
        ...(linesPerSecond !== undefined ? { linesPerSecond } : {}),
        ...(durationSeconds !== undefined ? { durationSeconds } : {}),
        ...(idleSeconds !== undefined ? { idleSeconds } : {}),
        ...(load.cli !== undefined ? { cli: resolve(load.cli) } : {}),
        ...(load.trace !== undefined ? { trace: resolve(load.trace) } : {}),
      });
    }
    case 'ingest': {
      const { benchIngest } = await import('../bench/ingest.js');
      const { benchModel } = await import('../bench/model.js');
      return { ...(await benchIngest({ corpusDir })), model: await benchModel({ corpusDir }) };
    }
    case 'latency': {
      const { benchLatency } = await import('../bench/latency.js');
      const cli = load.cli !== undefined ? { cli: resolve(load.cli) } : {};
      if (load.rssOnly) {
        if (load.levels !== undefined) throw usageError('--levels and --rss-only exclude each other');
        return benchLatency({ rssOnly: true, ...cli });
      }
      if (load.levels === undefined) return benchLatency(cli);
      const concurrency = load.levels.split(',').map((v) => positive('levels', v.trim()) as number);
      return benchLatency({ concurrency, latencyOnly: true, ...cli });
    }
    case 'plan': {
      const { benchPlan } = await import('../bench/plan.js');
      return benchPlan();
    }
    case 'memory': {
      const { benchMemory } = await import('../bench/memory.js');
      return { ...(await benchMemory()), unscored: await benchMemory({ scored: false }), withPlans: await benchMemory({ plan: true }), edited: await benchMemory({ sessions: 2, rounds: 100, editEveryLines: 5, planBudgetTokens: 20_000 }) };
    }
    case 'proxy': {
      const { benchProxy } = await import('../bench/proxy.js');
      return benchProxy();
    }
    case 'retention': {
      const { benchRetention } = await import('../bench/retention.js');
      return benchRetention({ corpusDir, ...(locomoDir !== undefined ? { locomoDir } : {}) });
    }
    case 'hooks': {
      const { benchHooks } = await import('../bench/hooks.js');
      return benchHooks();
    }
    case 'warm': {
      const { benchWarm } = await import('../bench/warm.js');
      const tmpDir = mkdtempSync(join(tmpdir(), 'contextd-bench-warm-'));
      try {
        return await benchWarm({ corpusDir, tmpDir });
      } finally {
        rmSync(tmpDir, { recursive: true, force: true });
      }
    }
  }
}

/** `contextd bench [ingest|latency|plan|retention|warm|load|hooks|proxy|all] [--json]`: benchmark figures as JSON. */
export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('run benchmark scenarios and print their figures as JSON')
    .argument('[scenario]', SCENARIOS.join('|'), 'all')
    .option('--corpus <dir>', 'folder of real transcripts (default $CONTEXTD_CORPUS)')
    .option('--locomo <dir>', 'retention: LoCoMo data, a folder with locomo-dev.json (default $CONTEXTD_LOCOMO)')
    .option('--json', 'print JSON (always on; accepted for symmetry)')
    .option('--duration <s>', 'load: seconds of load (default 60)')
    .option('--sessions <n>', 'load: sessions (default 50)')
    .option('--rate <n>', 'load: lines per second per session (default 20)')
    .option('--idle <s>', 'load: seconds idle after the load before RSS is read again (default 20)')
    .option('--levels <list>', 'latency: only these session counts, comma-separated (e.g. 100), without the RSS and limits parts')
    .option('--rss-only', 'latency: only the RSS part (100 sessions × ~270k tokens: cold start, then a restart), without the append → plan levels and limits')
    .option('--cli <path>', 'load, latency: another build\'s dist/src/cli/main.js to run as the daemon (before/after)')
    .option('--trace <file>', 'load: write the daemon\'s memory, backlog and plans in flight every 100 ms to FILE (JSON lines)')
    .action(async (scenario: string, flags: { corpus?: string; locomo?: string } & LoadFlags) => {
      if (!(SCENARIOS as readonly string[]).includes(scenario)) throw usageError(`unknown scenario "${scenario}": one of ${SCENARIOS.join(', ')}`);
      const corpusDir = corpusFolder(flags.corpus) ?? '';
      if (NEEDS_CORPUS.has(scenario as Scenario)) {
        if (corpusDir === '') throw usageError(`bench ${scenario} reads a folder of real transcripts: pass --corpus DIR or set CONTEXTD_CORPUS`);
        if (!existsSync(corpusDir)) throw usageError(`--corpus ${corpusDir}: no such folder`);
      }
      const list = scenario === 'all' ? (['ingest', 'plan', 'memory', 'retention', 'warm', 'latency', 'proxy'] as const) : [scenario as Exclude<Scenario, 'all'>];
      const results: Record<string, unknown> = {};
      if (flags.locomo !== undefined && !existsSync(join(flags.locomo, 'locomo-dev.json'))) throw usageError(`no locomo-dev.json in ${flags.locomo}`);
      for (const s of list) results[s] = await run(s, corpusDir, flags, flags.locomo);
      printJson({ node: process.version, platform: `${process.platform}-${process.arch}`, cpus: (await import('node:os')).cpus().length, ...(list.length === 1 ? results[list[0] as string] as object : results), benchPeakRssMiB: peakRssMiB() });
    });
}
