/**
 * Hook latency: wall time of `contextd hook claude-code|codex` as an agent runs it (a fresh
 * process, one UserPromptSubmit event on stdin, first prompt of a session): with the daemon
 * down before any state exists, down with a template store (the hook reads its warm snapshot;
 * and, for comparison, the store itself when there is no snapshot), and up.
 * A bare `node -e 0` is measured alongside: the part of the figure that is Node's own start-up.
 * Process wall time depends on what else the machine runs: the 1-minute load average before
 * and after is reported with the figures.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { harvestFiles } from '../harvest/index.js';
import { createTokenCounter } from '../model/tokens.js';
import { openDb } from '../store/db.js';
import { stateDbPath } from '../store/paths.js';
import { TemplateStore } from '../store/templates.js';
import { warmSnapshotPath, writeWarmSnapshot } from '../warm/snapshot.js';
import { seededRandom } from '../util/random.js';
import { silentLogger } from '../util/logger.js';
import { nowMs, round, startDaemonProcess, summarize } from './harness.js';
import { syntheticSession } from './warm.js';

const BIN = fileURLToPath(new URL('../../../bin/contextd.js', import.meta.url));

function timeOnce(args: readonly string[], input: string): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const p = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.on('error', reject);
    p.on('exit', () => resolve({ ms: nowMs() - t0, stdout }));
    p.stdin.end(input);
  });
}

/** `n` timed runs; `answered` counts the runs that printed a hook answer (a warm bootstrap). */
async function series(n: number, args: readonly string[], input: string): Promise<ReturnType<typeof summarize> & { answered: number }> {
  const samples: number[] = [];
  let answered = 0;
  for (let i = 0; i < n; i++) {
    const r = await timeOnce(args, input);
    samples.push(r.ms);
    if (r.stdout.includes('additionalContext')) answered++;
  }
  return { ...summarize(samples), answered };
}

/** Harvest `n` synthetic sessions into the state dir's template store and write its warm snapshot, as `warm harvest` does. */
async function seedTemplates(state: string, dir: string, n: number): Promise<{ templates: number; snapshotBytes: number }> {
  const sessions = join(dir, 'harvest');
  mkdirSync(sessions, { recursive: true });
  const r = seededRandom(7);
  for (let i = 0; i < n; i++) writeFileSync(join(sessions, `s-${i}.jsonl`), syntheticSession(r, i));
  const db = openDb(stateDbPath(state));
  try {
    const store = new TemplateStore(db);
    const run = await harvestFiles([sessions], { store, tokenCounter: createTokenCounter(), logger: silentLogger() });
    return { templates: run.harvested, snapshotBytes: writeWarmSnapshot(store, state).bytes };
  } finally {
    db.close();
  }
}

export async function benchHooks(opts: { runs?: number } = {}): Promise<Record<string, unknown>> {
  const runs = opts.runs ?? 30;
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-hooks-'));
  const loadBefore = round(loadavg()[0] ?? NaN, 2);
  try {
    const state = join(dir, 'state');
    const socket = join(dir, 'd.sock');
    // A task the synthetic sessions cover, so the bootstrap has templates to render.
    const event = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'bench', prompt: 'fix the failing test in the parser of acme/api', cwd: dir });
    const hookArgs = (agent: string): string[] => [BIN, 'hook', agent, '--state', state, '--socket', socket];
    const nodeBaseline = await series(runs, ['-e', '0'], '');
    const daemonDown = await series(runs, hookArgs('claude-code'), event);
    const { templates, snapshotBytes } = await seedTemplates(state, dir, 40);
    const daemonDownWithTemplates = await series(runs, hookArgs('claude-code'), event);
    // Without the snapshot (a store over its size limit, or an unreadable snapshot): the SQLite read.
    rmSync(warmSnapshotPath(state));
    const daemonDownStoreOnly = await series(runs, hookArgs('claude-code'), event);
    const daemon = await startDaemonProcess(['--watch', join(dir, 'none'), '--state', state, '--socket', socket]);
    let daemonUp;
    let codexDaemonUp;
    try {
      daemonUp = await series(runs, hookArgs('claude-code'), event);
      codexDaemonUp = await series(runs, hookArgs('codex'), event);
    } finally {
      await daemon.stop();
    }
    const load1m = { before: loadBefore, after: round(loadavg()[0] ?? NaN, 2) };
    return { scenario: 'hooks', unit: 'ms (process wall time)', runs, load1m, templates, snapshotBytes, nodeBaseline, daemonDown, daemonDownWithTemplates, daemonDownStoreOnly, daemonUp, codexDaemonUp };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
