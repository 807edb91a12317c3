import type { Command } from 'commander';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printJson, usageError } from './output.js';
import { peakRssMiB } from '../bench/harness.js';

const SCENARIOS = ['ingest', 'latency', 'retention', 'warm', 'all'] as const;
type Scenario = (typeof SCENARIOS)[number];

/** The corpus beside the repository (../shared/corpus), or --corpus. */
function defaultCorpus(): string {
  let dir = fileURLToPath(new URL('.', import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = resolve(dir, '../shared/corpus');
    if (existsSync(candidate)) return candidate;
    dir = resolve(dir, '..');
  }
  return resolve('../shared/corpus');
}

async function run(scenario: Exclude<Scenario, 'all'>, corpusDir: string, locomoDir: string | undefined): Promise<Record<string, unknown>> {
  switch (scenario) {
    case 'ingest': {
      const { benchIngest } = await import('../bench/ingest.js');
      const { benchModel } = await import('../bench/model.js');
      return { ...(await benchIngest({ corpusDir })), model: await benchModel({ corpusDir }) };
    }
    case 'latency': {
      const { benchLatency } = await import('../bench/latency.js');
      return benchLatency();
    }
    case 'retention': {
      const { benchRetention } = await import('../bench/retention.js');
      return benchRetention({ corpusDir, ...(locomoDir !== undefined ? { locomoDir } : {}) });
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

/** `contextd bench [ingest|latency|retention|warm|all] [--json]`: benchmark figures as JSON. */
export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('run benchmark scenarios and print their figures as JSON')
    .argument('[scenario]', SCENARIOS.join('|'), 'all')
    .option('--corpus <dir>', 'transcript corpus (default ../shared/corpus)')
    .option('--locomo <dir>', 'LoCoMo data for the retention scenario (default $CONTEXTD_LOCOMO)')
    .option('--json', 'print JSON (always on; accepted for symmetry)')
    .action(async (scenario: string, flags: { corpus?: string; locomo?: string }) => {
      if (!(SCENARIOS as readonly string[]).includes(scenario)) throw usageError(`unknown scenario "${scenario}": one of ${SCENARIOS.join(', ')}`);
      const corpusDir = flags.corpus ?? defaultCorpus();
      if (!existsSync(corpusDir)) throw usageError(`corpus not found at ${corpusDir}: pass --corpus DIR`);
      const list = scenario === 'all' ? (['ingest', 'retention', 'warm', 'latency'] as const) : [scenario as Exclude<Scenario, 'all'>];
      const results: Record<string, unknown> = {};
      if (flags.locomo !== undefined && !existsSync(join(flags.locomo, 'locomo-dev.json'))) throw usageError(`no locomo-dev.json in ${flags.locomo}`);
      for (const s of list) results[s] = await run(s, corpusDir, flags.locomo);
      printJson({ node: process.version, platform: `${process.platform}-${process.arch}`, cpus: (await import('node:os')).cpus().length, ...(list.length === 1 ? results[list[0] as string] as object : results), benchPeakRssMiB: peakRssMiB() });
    });
}
