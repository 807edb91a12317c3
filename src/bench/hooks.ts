/**
 * Hook latency: wall time of the prompt hook exactly as `contextd install` writes it into an
 * agent's settings, run the way agents run it (`sh -c COMMAND`, one UserPromptSubmit event on
 * stdin, first prompt of a session, this process's environment): with the daemon down before any
 * state exists, down with a template store (the hook reads its warm snapshot; and the store
 * itself when there is no snapshot), and up (Claude Code's and Codex's hook).
 * References under the same shell and environment: a bare `node -e 0`, and the same with
 * NODE_EXTRA_CA_CERTS unset (as the installed hook runs node) — Node's own start-up.
 * The cases run interleaved (one run of each per round), so a change in the machine's load
 * moves them alike; the 1-minute load average before and after is reported with the figures,
 * and the CPU the runs used (user + system, from this process's reaped-children times on Linux)
 * beside wall time, which other load moves far less.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { harvestFiles } from '../harvest/index.js';
import { HOOK_UNSET_ENV, hookCommand, installHooks } from '../integrations/install.js';
import { isContextdHookCommand, readSettings } from '../integrations/hook-settings.js';
import type { AgentName } from '../integrations/answer.js';
import { createTokenCounter } from '../model/tokens.js';
import { openDb } from '../store/db.js';
import { stateDbPath } from '../store/paths.js';
import { TemplateStore } from '../store/templates.js';
import { warmSnapshotPath, writeWarmSnapshot } from '../warm/snapshot.js';
import { seededRandom } from '../util/random.js';
import { silentLogger } from '../util/logger.js';
import { nowMs, round, startDaemonProcess, summarize } from './harness.js';
import { syntheticSession } from './warm.js';

/** CPU ms (user + system) of this process's reaped children so far, or undefined off Linux. */
function childrenCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // cutime and cstime are fields 16 and 17; the fields after the command name start at 3.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

interface Run {
  readonly ms: number;
  readonly cpuMs: number | undefined;
  readonly stdout: string;
}

/** One run of `command` through `sh -c`, `input` on stdin. */
function timeOnce(command: string, input: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const cpu0 = childrenCpuMs();
    const t0 = nowMs();
    const p = spawn('/bin/sh', ['-c', command], { stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.on('error', reject);
    p.on('exit', () => {
      const ms = nowMs() - t0;
      const cpu1 = childrenCpuMs();
      resolve({ ms, cpuMs: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined, stdout });
    });
    p.stdin.end(input);
  });
}

interface Case {
  readonly command: string;
  readonly input: string;
}

/**
 * `rounds` rounds of one run of each case, in turn. Per case: wall-time figures, `answered` (the
 * runs that printed a hook answer) and `cpuMsMean` (clock-tick resolution per run, so a mean).
 */
async function interleaved(rounds: number, cases: Readonly<Record<string, Case>>): Promise<Record<string, Record<string, number>>> {
  const runs: Record<string, Run[]> = {};
  for (let i = 0; i < rounds; i++) {
    for (const [name, c] of Object.entries(cases)) (runs[name] ??= []).push(await timeOnce(c.command, c.input));
  }
  const out: Record<string, Record<string, number>> = {};
  for (const [name, rs] of Object.entries(runs)) {
    const cpu = rs.map((r) => r.cpuMs);
    const cpuMsMean = cpu.every((c) => c !== undefined) ? round(cpu.reduce((a, b) => a + b, 0) / rs.length, 1) : undefined;
    out[name] = { ...summarize(rs.map((r) => r.ms)), answered: rs.filter((r) => r.stdout.includes('additionalContext')).length, ...(cpuMsMean !== undefined ? { cpuMsMean } : {}) };
  }
  return out;
}

/** The prompt hook's command as `contextd install AGENT --socket --state` writes it into a (temp) settings file. */
function installedPromptHook(agent: AgentName, settings: string, socket: string, state: string): string {
  installHooks(agent, settings, hookCommand(agent, { socket, state }), state);
  const isOurs = isContextdHookCommand(agent);
  const groups = (readSettings(settings)['hooks'] as Record<string, { hooks: { command: string }[] }[]>)['UserPromptSubmit'] ?? [];
  const command = groups.flatMap((g) => g.hooks.map((h) => h.command)).find(isOurs);
  if (command === undefined) throw new Error(`no contextd UserPromptSubmit hook in ${settings}`);
  return command;
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
    // One state dir per case, so the cases can run interleaved.
    const states = { empty: join(dir, 'empty'), snapshot: join(dir, 'snapshot'), store: join(dir, 'store'), up: join(dir, 'up') };
    mkdirSync(states.empty, { mode: 0o700 });
    const { templates, snapshotBytes } = await seedTemplates(states.snapshot, dir, 40);
    // Without the snapshot (a store over its size limit, or an unreadable snapshot): the SQLite read.
    cpSync(states.snapshot, states.store, { recursive: true });
    rmSync(warmSnapshotPath(states.store));
    cpSync(states.snapshot, states.up, { recursive: true });
    const down = join(dir, 'down.sock');
    const socket = join(dir, 'd.sock');
    // A task the synthetic sessions cover, so the bootstrap has templates to render.
    const event = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'bench', prompt: 'fix the failing test in the parser of acme/api', cwd: dir });
    const hook = (agent: AgentName, name: string, state: string, sock: string): Case => ({ command: installedPromptHook(agent, join(dir, `${name}.json`), sock, state), input: event });
    const node = `${process.execPath} -e 0`;
    const cases: Record<string, Case> = {
      nodeBaseline: { command: node, input: '' },
      nodeBareNoExtraCerts: { command: `env ${HOOK_UNSET_ENV.map((n) => `-u ${n}`).join(' ')} ${node}`, input: '' },
      daemonDown: hook('claude-code', 'down', states.empty, down),
      daemonDownWithTemplates: hook('claude-code', 'snapshot', states.snapshot, down),
      daemonDownStoreOnly: hook('claude-code', 'store', states.store, down),
      daemonUp: hook('claude-code', 'up', states.up, socket),
      codexDaemonUp: hook('codex', 'codex-up', states.up, socket),
    };
    const daemon = await startDaemonProcess(['--watch', join(dir, 'none'), '--state', states.up, '--socket', socket]);
    let figures;
    try {
      figures = await interleaved(runs, cases);
    } finally {
      await daemon.stop();
    }
    const load1m = { before: loadBefore, after: round(loadavg()[0] ?? NaN, 2) };
    return {
      scenario: 'hooks',
      unit: 'ms (process wall time; cpuMsMean: user + system CPU)',
      command: 'installed',
      shell: '/bin/sh -c',
      installedCommand: cases['daemonDownWithTemplates']?.command,
      nodeExtraCaCerts: process.env['NODE_EXTRA_CA_CERTS'] ? 'set' : 'unset',
      runs,
      order: 'interleaved',
      load1m,
      templates,
      snapshotBytes,
      ...figures,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
