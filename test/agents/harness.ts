/**
 * Running the real Claude Code and Codex CLI binaries (pinned devDependencies) offline against
 * the scripted model server, each in its own temp HOME (and CODEX_HOME) and workspace.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { readTranscriptFile } from '../../src/ingest/decoder.js';
import { sessionIdForFile } from '../../src/ingest/session-id.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { SessionModel } from '../../src/model/session.js';
import { codingWorkspaceFiles, type ModelServer } from './model-server/index.js';

const BIN = fileURLToPath(new URL('../../node_modules/.bin/', import.meta.url));
export const CLAUDE_BIN = join(BIN, 'claude');
export const CODEX_BIN = join(BIN, 'codex');
export const CONTEXTD_BIN = fileURLToPath(new URL('../../bin/contextd.js', import.meta.url));

/** One agent sandbox: HOME, workspace, state dir and socket path under one temp root. */
export interface Sandbox {
  readonly root: string;
  readonly home: string;
  readonly codexHome: string;
  readonly workspace: string;
  readonly state: string;
  readonly socket: string;
  cleanup(): void;
}

export function makeSandbox(buildLines = 100): Sandbox {
  const root = mkdtempSync(join(tmpdir(), 'ctxd-agent-'));
  const home = join(root, 'home');
  const workspace = join(root, 'ws');
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  mkdirSync(join(home, '.claude', 'projects'), { recursive: true });
  for (const [p, c] of Object.entries(codingWorkspaceFiles(buildLines))) {
    mkdirSync(dirname(join(workspace, p)), { recursive: true });
    writeFileSync(join(workspace, p), c);
  }
  return { root, home, codexHome, workspace, state: join(root, 'state'), socket: join(root, 'd.sock'), cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run a binary to completion (async: the model server lives in this process). */
export function run(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 150_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out after ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`));
    }, timeoutMs);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A binary that is not installed fails at once (ENOENT), not after the timeout.
    p.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} could not be started (${err.message}); the real agents come with \`npm ci\` (devDependencies)`));
    });
  });
}

function baseEnv(sb: Sandbox): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'], HOME: sb.home, CODEX_HOME: sb.codexHome, LANG: 'C.UTF-8' };
}

/** `claude ARGS` against the server (non-essential traffic off: there is no network). */
export function runClaude(sb: Sandbox, server: ModelServer, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return run(CLAUDE_BIN, args, sb.workspace, { ...baseEnv(sb), ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', ...env });
}

/** Point Codex at the server: a custom provider speaking the Responses API. */
export function writeCodexConfig(sb: Sandbox, server: ModelServer): void {
  writeFileSync(
    join(sb.codexHome, 'config.toml'),
    [
      'model = "gpt-5.1-codex"',
      'model_provider = "scripted"',
      '[model_providers.scripted]',
      'name = "scripted"',
      `base_url = "${server.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "SCRIPTED_API_KEY"',
      '',
    ].join('\n'),
  );
}

/** `codex exec … ARGS` (sandbox and approvals off: the scripted commands only touch the workspace). */
export function runCodex(sb: Sandbox, server: ModelServer, args: readonly string[]): Promise<RunResult> {
  writeCodexConfig(sb, server);
  return run(CODEX_BIN, ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', ...args], sb.workspace, { ...baseEnv(sb), SCRIPTED_API_KEY: 'sk-scripted' });
}

/** Run the contextd CLI (bin/contextd.js, as an installed hook would). */
export function runContextd(sb: Sandbox, args: readonly string[]): Promise<RunResult> {
  return run(process.execPath, [CONTEXTD_BIN, ...args], sb.workspace, { ...baseEnv(sb) });
}

/** Every *.jsonl under `dir`, recursively. */
export function transcripts(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...transcripts(p));
    else if (e.name.endsWith('.jsonl')) out.push(p);
  }
  return out;
}

/** Parsed lines of a JSONL file. */
export function lines(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** How far contextd's estimate was from the agent's own report, at each report after the first. */
export interface TokenTracking {
  readonly reports: number;
  /** |estimate before the report − reported| / reported, per report after the first. */
  readonly errors: number[];
  readonly maxError: number;
  /** The final calibrated estimate and the last reported size. */
  readonly finalEstimate: number;
  readonly lastReported: number;
}

/**
 * Replay a transcript through the session model and, at each agent usage report, compare the
 * estimate contextd had just before it (calibrated on the earlier reports only) with the report.
 */
export async function tokenTracking(file: string): Promise<TokenTracking> {
  const t = await readTranscriptFile(file);
  const model = new SessionModel({ sessionId: 'tracking' });
  const errors: number[] = [];
  let reports = 0;
  let lastReported = 0;
  for (const e of t.events) {
    if (e.type === 'usage') {
      if (reports > 0) errors.push(Math.abs(model.calibration().estimatedTokens - e.contextTokens) / e.contextTokens);
      reports++;
      lastReported = e.contextTokens;
    } else if (e.type === 'reset') {
      reports = 0;
    }
    model.apply(e);
  }
  return { reports, errors, maxError: Math.max(0, ...errors), finalEstimate: model.calibration().estimatedTokens, lastReported };
}

/** What contextd's adapter made of a transcript: tool call ids, result ids, unknown line types. */
export async function parsedTools(file: string): Promise<{ callIds: string[]; resultIds: (string | undefined)[]; unknownTypes: Set<string> }> {
  const t = await readTranscriptFile(file);
  const msgs = t.events.flatMap((e) => (e.type === 'message' ? [e.message] : []));
  return {
    callIds: msgs.flatMap((m) => m.toolCalls ?? []).map((c) => c.id),
    resultIds: msgs.filter((m) => m.role === 'tool').map((m) => m.toolCallId),
    unknownTypes: new Set(t.events.flatMap((e) => (e.type === 'unknown' ? [e.lineType] : []))),
  };
}

/** The daemon's token count for a session, once it has read at least half of `reported`. */
export async function daemonTokens(socketPath: string, sessionId: string, reported: number): Promise<number> {
  const client = new ContextdClient({ socketPath, clientInfo: { name: 'agents-test', version: '1' }, reconnect: false });
  await client.connect();
  try {
    // Generous: on a loaded machine the daemon's watcher can take a while to pick up a new dated folder.
    for (let i = 0; i < 450; i++) {
      const h = await client.request('session.headroom', { sessionId }).catch(() => undefined);
      if (h && h.tokens >= reported * 0.5) return h.tokens;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`the daemon never reported session ${sessionId}`);
  } finally {
    await client.close();
  }
}

/**
 * The agent's own usage reports against contextd: the calibrated estimate before each report
 * (at least 6 reports) and the daemon's final count both within 10 % (printed for the README).
 */
export async function expectUsageTracked(agent: string, sb: Sandbox, file: string): Promise<void> {
  const track = await tokenTracking(file);
  console.log(`${agent} token tracking: ${track.reports} reports, errors ${track.errors.map((e) => (e * 100).toFixed(1) + '%').join(' ')}`);
  expect(track.reports).toBeGreaterThanOrEqual(6);
  expect(track.maxError).toBeLessThan(0.1);
  const tokens = await daemonTokens(sb.socket, sessionIdForFile(file), track.lastReported);
  console.log(`${agent} daemon tokens ${tokens} vs last reported ${track.lastReported}`);
  expect(Math.abs(tokens - track.lastReported) / track.lastReported).toBeLessThan(0.1);
}
