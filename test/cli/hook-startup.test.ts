/**
 * `contextd hook` runs on an agent's critical path, once per event: its start-up must stay lean.
 * Each case spawns the built hook (bin/contextd.js, as installed hooks run it) under a preload
 * that records every module it loads — the launcher, the hook bundle and npm packages from the
 * require cache at exit, and the Node built-ins loaded after the preload from
 * process.moduleLoadList (as `node:NAME`) — and pins that no heavy library is among them. The
 * hook path is CommonJS throughout (an ES module import, such as the fallback to dist/src/,
 * would leave the bundle out of the require cache and fail the first check). No timing is asserted
 * (`npm run bench -- hooks` measures that); what is loaded decides it.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenCounter } from '../../src/model/tokens.js';
import { CONTEXTD_BIN } from '../agents/harness.js';
import { e2eScope, runCli, type DaemonDir } from '../e2e/spawn.js';
import { generateTranscript, writeTranscripts } from '../fixtures/transcripts.js';
import { WARM_SNAPSHOT_FILE } from '../../src/warm/snapshot-format.js';

const scope = e2eScope();
/** Packages a hook must not load on the paths below (each costs tens to hundreds of ms). */
const HEAVY = ['pino', 'zod', 'commander', 'tiktoken', 'better-sqlite3'] as const;

const TASK = 'Fix the failing date parser test in src/parse/date.ts (repo acme/dateparse): parseDate loses the UTC offset.';

let tracer: string;
const traceDir = mkdtempSync(join(tmpdir(), 'contextd-hook-trace-'));
afterAll(() => rmSync(traceDir, { recursive: true, force: true }));
beforeAll(() => {
  // A CommonJS preload (-r), not an ESM loader hook: registering one would itself load node:net
  // and send the CommonJS launcher through the ESM loader, changing what is measured.
  tracer = join(traceDir, 'trace.cjs');
  writeFileSync(
    tracer,
    `'use strict';
const { appendFileSync } = require('node:fs');
const before = new Set(process.moduleLoadList);
const builtins = () => process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith('NativeModule ')).map((m) => 'node:' + m.slice('NativeModule '.length));
process.on('exit', () => appendFileSync(process.env.CONTEXTD_LOAD_TRACE, [...Object.keys(require.cache), ...builtins()].join('\\n') + '\\n'));
`,
  );
});

interface HookRun {
  readonly code: number | null;
  readonly stdout: string;
  /** Every module file the hook process loaded (paths), and the built-ins it loaded (`node:NAME`). */
  readonly loaded: string[];
}

function runHook(d: DaemonDir, agent: string, event: Record<string, unknown>, extra: readonly string[] = [], bin = CONTEXTD_BIN): Promise<HookRun> {
  const trace = join(d.dir, `trace-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(trace, '');
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-r', tracer, bin, 'hook', agent, '--state', d.state, '--socket', d.socket, ...extra], {
      env: { PATH: process.env['PATH'], HOME: d.dir, CONTEXTD_LOAD_TRACE: trace },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let stdout = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.on('error', reject);
    p.on('exit', (code) => resolve({ code, stdout, loaded: readFileSync(trace, 'utf8').split('\n').filter(Boolean) }));
    p.stdin.end(JSON.stringify(event));
  });
}

/** The heavy packages among `loaded` (by their node_modules folder). */
function heavy(loaded: readonly string[]): string[] {
  return HEAVY.filter((name) => loaded.some((f) => f.includes(`/node_modules/${name}/`)));
}

function expectLean(r: HookRun, allowed: readonly string[] = []): void {
  expect(r.code).toBe(0);
  // The trace saw the hook itself, from the CommonJS bundle (dist/hook/, built with dist/ by the
  // global setup): an empty trace would pass every exclusion below.
  expect(r.loaded.some((f) => f.endsWith('/dist/hook/hook.cjs'))).toBe(true);
  expect(r.loaded.filter((f) => f.includes('/dist/src/'))).toEqual([]);
  expect(heavy(r.loaded)).toEqual([...allowed]);
}

function contextOf(r: HookRun): string {
  return (JSON.parse(r.stdout) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext;
}

/** A state dir with one harvested session on TASK. */
async function harvested(d: DaemonDir): Promise<void> {
  const [file] = writeTranscripts(d.watch, [generateTranscript('claude-code', { seed: 1, task: TASK })]);
  const r = await runCli(['warm', 'harvest', file!, '--state', d.state]);
  expect(r.code, r.stderr).toBe(0);
}

/**
 * An installed copy of contextd (bin/, package.json, the hook bundle) under `root`, with every
 * npm package linked from this checkout's node_modules except better-sqlite3, whose package is
 * copied without its compiled addon, or with `addon` (bytes) in the addon's place. Returns the
 * launcher's path and where the copy expects the addon.
 */
function installedWithAddon(root: string, addon: Buffer | undefined): { bin: string; addonPath: string } {
  const repo = dirname(dirname(CONTEXTD_BIN));
  cpSync(join(repo, 'bin'), join(root, 'bin'), { recursive: true });
  cpSync(join(repo, 'package.json'), join(root, 'package.json'));
  cpSync(join(repo, 'dist', 'hook'), join(root, 'dist', 'hook'), { recursive: true });
  mkdirSync(join(root, 'node_modules'));
  for (const name of readdirSync(join(repo, 'node_modules'))) {
    if (name !== 'better-sqlite3' && name !== '.bin') symlinkSync(realpathSync(join(repo, 'node_modules', name)), join(root, 'node_modules', name));
  }
  const pkg = join(root, 'node_modules', 'better-sqlite3');
  cpSync(join(repo, 'node_modules', 'better-sqlite3', 'package.json'), join(pkg, 'package.json'));
  cpSync(join(repo, 'node_modules', 'better-sqlite3', 'lib'), join(pkg, 'lib'), { recursive: true });
  const addonPath = join(pkg, 'build', 'Release', 'better_sqlite3.node');
  if (addon) {
    mkdirSync(dirname(addonPath), { recursive: true });
    writeFileSync(addonPath, addon);
  }
  return { bin: join(root, 'bin', 'contextd.js'), addonPath };
}

const prompt = (d: DaemonDir, session = 'p1'): Record<string, unknown> => ({ hook_event_name: 'UserPromptSubmit', session_id: session, prompt: 'fix the date parser test: parseDate loses the UTC offset', cwd: d.dir });

describe('contextd hook start-up', () => {
  it('daemon down, no state yet: a first prompt loads none of pino, zod, commander, tiktoken, better-sqlite3', async () => {
    const d = scope.tempDir('hook-lean');
    const r = await runHook(d, 'claude-code', prompt(d));
    expectLean(r);
    expect(r.stdout).toBe('');
    // Neither the transcript reader, the socket client (no socket file) nor the warm code is needed.
    expect(r.loaded.filter((f) => /\/dist\/hook\/(decoder|hook-ipc|hook-warm)-/.test(f))).toEqual([]);
    expect(r.loaded.filter((f) => f === 'node:net')).toEqual([]);
  });

  it('daemon down with templates: the bootstrap comes from the warm snapshot `warm harvest` wrote, without SQLite or tiktoken', async () => {
    const d = scope.tempDir('hook-snapshot');
    await harvested(d);
    const r = await runHook(d, 'claude-code', prompt(d), ['--budget', '400']);
    expectLean(r);
    expect(r.loaded.some((f) => /\/dist\/hook\/hook-warm-/.test(f))).toBe(true);
    // The answer goes to fd 1 with one write, not through process.stdout's socket stream.
    expect(r.loaded.filter((f) => f === 'node:net' || f === 'node:tty')).toEqual([]);
    const bound = Number(/\(at most (\d+) tokens\)/.exec(contextOf(r))?.[1]);
    expect(bound).toBeGreaterThan(0);
    expect(bound).toBeLessThanOrEqual(400);
  });

  it('daemon down with templates and no snapshot: the bootstrap comes from the store (SQLite) within budget, without tiktoken', async () => {
    const d = scope.tempDir('hook-store');
    await harvested(d);
    rmSync(join(d.state, WARM_SNAPSHOT_FILE));
    const r = await runHook(d, 'claude-code', prompt(d), ['--budget', '400']);
    expectLean(r, ['better-sqlite3']);
    // better-sqlite3's JavaScript comes bundled and its addon by path: from node_modules only
    // the addon is loaded (no module lookups, no `bindings` probing a dozen paths).
    expect(r.loaded.filter((f) => f.includes('/node_modules/'))).toEqual([expect.stringMatching(/\/node_modules\/better-sqlite3\/build\/Release\/better_sqlite3\.node$/)]);
    // The store hashes only on its write paths: node:crypto (~7 ms) stays unloaded.
    expect(r.loaded).not.toContain('node:crypto');
    const text = contextOf(r);
    const bound = Number(/\(at most (\d+) tokens\)/.exec(text)?.[1]);
    expect(bound).toBeGreaterThan(0);
    expect(bound).toBeLessThanOrEqual(400);
    // The byte bound holds against the real count.
    const body = text.split('\n\n').slice(1).join('\n\n');
    expect(createTokenCounter().count(body)).toBeLessThanOrEqual(bound);
  });

  it('daemon down, a snapshot whose detail lines are JSON but not details: the bootstrap comes from the store, and hooks.log says why', async () => {
    const d = scope.tempDir('hook-bad-detail');
    await harvested(d);
    const path = join(d.state, WARM_SNAPSHOT_FILE);
    const [head, ...details] = readFileSync(path, 'utf8').split('\n');
    // Every detail line becomes `{"items":[null],...}`, padded with spaces to its length, so the
    // header's byte ranges still hold and each line parses, but is no detail.
    const bad = details.map((l) => (l.length === 0 ? l : JSON.stringify({ items: [null], body: '' }).padEnd(Buffer.byteLength(l, 'utf8'), ' ')));
    writeFileSync(path, [head, ...bad].join('\n'));
    const r = await runHook(d, 'claude-code', prompt(d), ['--budget', '400']);
    expectLean(r, ['better-sqlite3']);
    expect(Number(/\(at most (\d+) tokens\)/.exec(contextOf(r))?.[1])).toBeGreaterThan(0);
    const notes = readFileSync(join(d.state, 'hooks.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(notes.find((n) => n['msg'] === 'warm snapshot unusable; reading the template store')).toMatchObject({ code: 'WARM_SNAPSHOT_INVALID', err: expect.stringMatching(/malformed detail of template/) as unknown });
    expect(notes.some((n) => n['msg'] === 'warm bootstrap read from the template store')).toBe(true);
  });

  // A missing addon, and a file of junk bytes standing for an addon built for another Node ABI.
  for (const [what, addon] of [['missing', undefined], ['not loadable', Buffer.from('\x7fnot an ELF shared object, junk bytes '.repeat(64))]] as const) {
    it(`daemon down, store path, better-sqlite3's addon ${what}: the hook exits 0, prints nothing, and hooks.log names the addon path`, async () => {
      const d = scope.tempDir(`hook-addon-${what.replace(' ', '-')}`);
      await harvested(d);
      rmSync(join(d.state, WARM_SNAPSHOT_FILE));
      const installed = installedWithAddon(join(d.dir, 'installed'), addon);
      const r = await runHook(d, 'claude-code', prompt(d), ['--budget', '400'], installed.bin);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('');
      const notes = readFileSync(join(d.state, 'hooks.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      const failed = notes.find((n) => n['code'] === 'STORE_FAILED');
      expect(failed, JSON.stringify(notes)).toBeDefined();
      expect(String(failed!['err'])).toContain(installed.addonPath);
    });
  }

  it('daemon up: Claude Code and Codex prompts, and Codex SessionEnd, are answered over the socket, still lean', async () => {
    const d = scope.tempDir('hook-up');
    await harvested(d);
    await scope.daemon(['--watch', d.watch, '--state', d.state, '--socket', d.socket]);
    // A generous socket timeout: on a loaded machine the daemon's answer must not lose to the fallback.
    const slow = ['--timeout-ms', '10000'];
    const claude = await runHook(d, 'claude-code', prompt(d, 'c1'), slow);
    expectLean(claude);
    // The socket client is loaded on this path: the trace does see built-ins (so the node:net
    // exclusions above can fail).
    expect(claude.loaded).toContain('node:net');
    expect(contextOf(claude)).toMatch(/^contextd warm start: .* \(\d+ tokens\)\./);
    const codex = await runHook(d, 'codex', prompt(d, 'x1'), slow);
    expectLean(codex);
    expect(contextOf(codex)).toContain('contextd warm start');
    const [rollout] = writeTranscripts(join(d.dir, 'codex'), [generateTranscript('codex', { seed: 4, task: TASK })]);
    const end = await runHook(d, 'codex', { hook_event_name: 'SessionEnd', session_id: 'x1', transcript_path: rollout, cwd: d.dir, reason: 'exit' }, slow);
    expectLean(end);
    expect(end.stdout).toBe('');
  });
});
