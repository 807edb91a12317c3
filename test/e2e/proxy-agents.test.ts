/**
 * The real `claude` and `codex` binaries pointed at the spawned daemon's proxy, with the
 * scripted model server (test/agents/model-server) as their provider. Two recording relays
 * sit on either side of the proxy (agent → relay → proxy → relay → model server) so the bytes
 * the agent received can be compared with the bytes the provider sent.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { codingTask, codingWorkspaceFiles, startModelServer, type ModelServer } from '../agents/model-server/index.js';
import { RecordingRelay } from '../proxy/relay.js';
import { tokensOf } from '../proxy/agent.js';
import { anthropicProblems, responsesProblems } from '../proxy/validate.js';
import { runCli, spawnDaemon, type SpawnedDaemon } from './spawn.js';

const BIN = fileURLToPath(new URL('../../node_modules/.bin/', import.meta.url));
const CLAUDE = join(BIN, 'claude');
const CODEX = join(BIN, 'codex');
const KEY = 'sk-e2e-proxy-CREDENTIAL-5a4b3c2d1e0f';
const RESERVE = 0.15;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Rig {
  root: string;
  ws: string;
  home: string;
  state: string;
  socket: string;
  server: ModelServer;
  daemon: SpawnedDaemon;
  agentSide: RecordingRelay;
  providerSide: RecordingRelay;
  agentUrl: string;
}

async function rig(budget: number, buildLines: number, builds: number): Promise<Rig> {
  const root = mkdtempSync(join(tmpdir(), 'contextd-proxy-e2e-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const ws = join(root, 'ws');
  const home = join(root, 'home');
  const state = join(root, 'state');
  const watch = join(root, 'watch');
  for (const d of [ws, home, state, watch]) mkdirSync(d, { recursive: true });
  for (const [p, c] of Object.entries(codingWorkspaceFiles(buildLines))) {
    mkdirSync(dirname(join(ws, p)), { recursive: true });
    writeFileSync(join(ws, p), c);
  }
  const server = await startModelServer({ script: codingTask({ builds }), workspace: ws, lifetimeMs: 300_000 });
  cleanups.push(() => server.close());
  const providerSide = new RecordingRelay(server.url, false);
  const upstream = await providerSide.start();
  cleanups.push(() => providerSide.close());
  const socket = join(root, 'contextd.sock');
  const daemon = await spawnDaemon(['--watch', watch, '--socket', socket, '--state', state, '--budget', String(budget), '--reserve', String(RESERVE), '--proxy', '127.0.0.1:0', '--anthropic-upstream', upstream, '--openai-upstream', upstream]);
  cleanups.push(async () => {
    if (daemon.proc.exitCode === null) {
      daemon.proc.kill('SIGTERM');
      await daemon.exited;
    }
  });
  const listening = await daemon.waitForLog((l) => l.msg === 'proxy listening', 10_000, 'proxy listening');
  const agentSide = new RecordingRelay(`http://127.0.0.1:${String(listening['port'])}`, true);
  const agentUrl = await agentSide.start();
  cleanups.push(() => agentSide.close());
  return { root, ws, home, state, socket, server, daemon, agentSide, providerSide, agentUrl };
}

/** Every file under a directory, as latin1 text. */
function everything(dir: string): string {
  const walk = (d: string): string[] => readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
  return walk(dir).map((f) => readFileSync(f).toString('latin1')).join('\n');
}

async function checkRun(r: Rig, budget: number, format: 'anthropic' | 'openai-responses'): Promise<void> {
  const main = r.server.requestsOf('main');
  const bodies = main.map((q) => q.body as Record<string, unknown>);
  // the agent's requests were never refused by the provider as malformed (orphaned tool blocks)
  expect(r.server.requestsOf('invalid')).toEqual([]);
  const validate = format === 'anthropic' ? anthropicProblems : responsesProblems;
  for (const b of bodies) expect(validate(b)).toEqual([]);
  // compaction started, and from then on every request stayed within budget × (1 − reserve)
  const first = bodies.findIndex((b) => JSON.stringify(b).includes('[contextd recall h_'));
  const sizes = bodies.map((b) => tokensOf(format, b, budget));
  console.log(JSON.stringify({ format, budget, requests: main.length, firstCompacted: first, sizes, proxied: r.daemon.logs.filter((l) => l.msg === 'proxied').map((l) => [l['tokensIn'], l['tokensOut']]) }));
  expect(first, 'a request carried a contextd summary').toBeGreaterThanOrEqual(0);
  for (const [i, n] of sizes.entries()) if (i >= first) expect(n, `main request ${i}`).toBeLessThanOrEqual(budget * (1 - RESERVE));
  // every response reached the agent byte for byte as the provider sent it
  expect(r.agentSide.bodies.size).toBe(r.server.requests.length);
  for (const [seq, bytes] of r.agentSide.bodies) expect(bytes.equals(r.providerSide.bodies.get(seq) ?? Buffer.alloc(0)), `response ${seq}`).toBe(true);
  // the proxied conversation is listed with the proxy's figures
  const status = await runCli(['status', '--json', '--socket', r.socket]);
  const s = JSON.parse(status.stdout) as { sessions: { source: string }[]; proxy: { plansApplied: number; requests: number } };
  expect(s.sessions.some((x) => x.source === 'proxy')).toBe(true);
  expect(s.proxy.plansApplied).toBeGreaterThan(0);
  r.daemon.proc.kill('SIGTERM');
  expect((await r.daemon.exited).code).toBe(0);
  // the credential went upstream but nowhere else
  expect(JSON.stringify(r.daemon.logs)).not.toContain(KEY);
  expect(everything(r.state)).not.toContain(KEY);
  const applied = r.daemon.logs.filter((l) => l.msg === 'proxy plan applied');
  expect(applied.length).toBeGreaterThan(0);
  console.log(JSON.stringify({ format, plans: applied.map((l) => ({ before: l['tokensBefore'], after: l['tokensAfter'], edits: l['edits'] })) }));
}

describe.skipIf(!existsSync(CLAUDE))('Claude Code through the proxy', () => {
  it('runs a long task with bulky tool outputs to completion within budget', { timeout: 300_000 }, async () => {
    const budget = 16_000;
    const r = await rig(budget, 400, 8);
    const out = await run(CLAUDE, ['-p', 'fix the calculator so the tests pass', '--allowedTools', 'Bash,Read,Edit', '--output-format', 'json'], r.ws, { PATH: process.env['PATH'], HOME: r.home, ANTHROPIC_BASE_URL: r.agentUrl, ANTHROPIC_API_KEY: KEY }, 240_000);
    expect(out.code, out.stderr.slice(-2000)).toBe(0);
    expect(out.stdout).toContain('the tests pass');
    expect(readFileSync(join(r.ws, 'src/calc.txt'), 'utf8')).toContain('a + b');
    await checkRun(r, budget, 'anthropic');
  });
});

describe.skipIf(!existsSync(CODEX))('Codex CLI through the proxy', () => {
  it('runs a long task with bulky tool outputs to completion within budget', { timeout: 300_000 }, async () => {
    const budget = 20_000;
    const r = await rig(budget, 400, 6);
    const codexHome = join(r.home, '.codex');
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(join(codexHome, 'config.toml'), `model = "gpt-5.1-codex"\nmodel_provider = "scripted"\n[model_providers.scripted]\nname = "scripted"\nbase_url = "${r.agentUrl}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n`);
    const out = await run(CODEX, ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', 'fix the calculator so the tests pass'], r.ws, { PATH: process.env['PATH'], HOME: r.home, CODEX_HOME: codexHome, SCRIPTED_API_KEY: KEY }, 240_000);
    expect(out.code, out.stderr.slice(-2000)).toBe(0);
    expect(readFileSync(join(r.ws, 'src/calc.txt'), 'utf8')).toContain('a + b');
    await checkRun(r, budget, 'openai-responses');
  });
});
