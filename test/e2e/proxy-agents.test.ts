/**
 * The real `claude` and `codex` binaries pointed at the spawned daemon's proxy, with the
 * scripted model server (test/agents/model-server) as their provider. Two recording relays
 * sit on either side of the proxy (agent → relay → proxy → relay → model server) so the bytes
 * the agent received can be compared with the bytes the provider sent.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RECALL_CALL_RE, RECALL_TOOL, codingTask, codingWorkspaceFiles, startModelServer, type ModelServer } from '../agents/model-server/index.js';
import { CLAUDE_BIN, CODEX_BIN, run, type RunResult } from '../agents/harness.js';
import { RecordingRelay } from '../proxy/relay.js';
import { filesText } from '../proxy/helpers.js';
import { tokensOf } from '../proxy/agent.js';
import { anthropicProblems, responsesProblems } from '../proxy/validate.js';
import { runCli, spawnDaemon, type SpawnedDaemon } from './spawn.js';
import { archivedText, type ArchivedMessage } from '../../src/store/index.js';

const CLAUDE = CLAUDE_BIN;
const CODEX = CODEX_BIN;
const KEY = 'sk-e2e-proxy-CREDENTIAL-5a4b3c2d1e0f';
const RESERVE = 0.15;

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

interface RigOptions {
  /** Run the daemon with --proxy-recall-tool, and script the model to call the tool once. */
  readonly recall?: boolean;
}

async function rig(budget: number, buildLines: number, builds: number, o: RigOptions = {}): Promise<Rig> {
  const root = mkdtempSync(join(tmpdir(), 'contextd-proxy-e2e-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const ws = join(root, 'ws');
  const home = join(root, 'home');
  const state = join(root, 'state');
  // the daemon also tails the agents' own transcripts, so each proxied conversation links to one
  const watch = [join(home, '.claude', 'projects'), join(home, '.codex', 'sessions')];
  for (const d of [ws, home, state, ...watch]) mkdirSync(d, { recursive: true });
  for (const [p, c] of Object.entries(codingWorkspaceFiles(buildLines))) {
    mkdirSync(dirname(join(ws, p)), { recursive: true });
    writeFileSync(join(ws, p), c);
  }
  const server = await startModelServer({ script: codingTask({ builds, recallOnce: o.recall === true }), workspace: ws, lifetimeMs: 300_000 });
  cleanups.push(() => server.close());
  const providerSide = new RecordingRelay(server.url, false);
  const upstream = await providerSide.start();
  cleanups.push(() => providerSide.close());
  const socket = join(root, 'contextd.sock');
  const daemon = await spawnDaemon([...watch.flatMap((w) => ['--watch', w]), '--socket', socket, '--state', state, '--budget', String(budget), '--reserve', String(RESERVE), '--proxy', '127.0.0.1:0', '--anthropic-upstream', upstream, '--openai-upstream', upstream, ...(o.recall ? ['--proxy-recall-tool'] : [])]);
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

/** Names of the tools a forwarded request offered. */
function toolNames(body: Record<string, unknown>): string[] {
  const tools = Array.isArray(body['tools']) ? (body['tools'] as Record<string, unknown>[]) : [];
  return tools.map((t) => String(t['name'] ?? (t['function'] as Record<string, unknown> | undefined)?.['name'] ?? t['type']));
}

async function checkRun(r: Rig, budget: number, format: 'anthropic' | 'openai-responses', recall = false): Promise<void> {
  const main = r.server.requestsOf('main');
  const bodies = main.map((q) => q.body as Record<string, unknown>);
  // the recall tool is offered only when asked for, and then last, after the agent's own tools
  for (const b of bodies) {
    const names = toolNames(b);
    if (recall) expect(names.at(-1)).toBe(RECALL_TOOL);
    else expect(names).not.toContain(RECALL_TOOL);
  }
  // the agent's requests were never refused by the provider as malformed (orphaned tool blocks)
  expect(r.server.requestsOf('invalid')).toEqual([]);
  const validate = format === 'anthropic' ? anthropicProblems : responsesProblems;
  for (const b of bodies) expect(validate(b)).toEqual([]);
  // compaction started, and from then on every request stayed within budget × (1 − reserve)
  // (in the conversation: the recall tool's description quotes the handle form too)
  const first = bodies.findIndex((b) => JSON.stringify(b['messages'] ?? b['input']).includes('[contextd recall h_'));
  const sizes = bodies.map((b) => tokensOf(format, b, budget));
  console.log(JSON.stringify({ format, budget, requests: main.length, firstCompacted: first, sizes, proxied: r.daemon.logs.filter((l) => l.msg === 'proxied').map((l) => [l['tokensIn'], l['tokensOut']]) }));
  expect(first, 'a request carried a contextd summary').toBeGreaterThanOrEqual(0);
  for (const [i, n] of sizes.entries()) if (i >= first) expect(n, `main request ${i}`).toBeLessThanOrEqual(budget * (1 - RESERVE));
  // every response reached the agent byte for byte as the provider sent it
  expect(r.agentSide.bodies.size).toBe(r.server.requests.length);
  for (const [seq, bytes] of r.agentSide.bodies) expect(bytes.equals(r.providerSide.bodies.get(seq) ?? Buffer.alloc(0)), `response ${seq}`).toBe(true);
  // the proxied conversation is listed with the proxy's figures
  const status = await runCli(['status', '--json', '--socket', r.socket]);
  const s = JSON.parse(status.stdout) as { sessions: { sessionId: string; source: string; linkedSession: string | null; file: string }[]; proxy: { plansApplied: number; requests: number } };
  expect(s.sessions.some((x) => x.source === 'proxy')).toBe(true);
  // linked both ways with the transcript the agent wrote (Claude Code: its session id; Codex: its rollout id)
  const tailed = s.sessions.filter((x) => x.source === 'transcript');
  expect(tailed, JSON.stringify(s.sessions)).toHaveLength(1);
  const linked = s.sessions.find((x) => x.source === 'proxy' && x.linkedSession === tailed[0]?.sessionId);
  expect(linked, JSON.stringify(s.sessions)).toBeDefined();
  expect(tailed[0]?.linkedSession).toBe(linked?.sessionId);
  expect(linked?.sessionId.startsWith(`proxy-${tailed[0]?.sessionId ?? ''}`)).toBe(true);
  expect(s.proxy.plansApplied).toBeGreaterThan(0);
  r.daemon.proc.kill('SIGTERM');
  expect((await r.daemon.exited).code).toBe(0);
  // the credential went upstream but nowhere else
  expect(JSON.stringify(r.daemon.logs)).not.toContain(KEY);
  expect(filesText(r.state)).not.toContain(KEY);
  const applied = r.daemon.logs.filter((l) => l.msg === 'proxy plan applied');
  expect(applied.length).toBeGreaterThan(0);
  console.log(JSON.stringify({ format, plans: applied.map((l) => ({ before: l['tokensBefore'], after: l['tokensAfter'], edits: l['edits'] })) }));
}

/** The scripted task run by Claude Code through the proxy, to completion. */
async function runClaudeThrough(r: Rig): Promise<void> {
  const out = await run(CLAUDE, ['-p', 'fix the calculator so the tests pass', '--allowedTools', 'Bash,Read,Edit', '--output-format', 'json'], r.ws, { PATH: process.env['PATH'], HOME: r.home, ANTHROPIC_BASE_URL: r.agentUrl, ANTHROPIC_API_KEY: KEY }, 240_000);
  expectCompleted(r, out);
  expect(out.stdout).toContain('the tests pass');
}

/** The scripted task run by Codex CLI through the proxy (a custom Responses provider), to completion. */
async function runCodexThrough(r: Rig): Promise<void> {
  const codexHome = join(r.home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(join(codexHome, 'config.toml'), `model = "gpt-5.1-codex"\nmodel_provider = "scripted"\n[model_providers.scripted]\nname = "scripted"\nbase_url = "${r.agentUrl}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n`);
  const out = await run(CODEX, ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', 'fix the calculator so the tests pass'], r.ws, { PATH: process.env['PATH'], HOME: r.home, CODEX_HOME: codexHome, SCRIPTED_API_KEY: KEY }, 240_000);
  expectCompleted(r, out);
}

function expectCompleted(r: Rig, out: RunResult): void {
  expect(out.code, out.stderr.slice(-2000)).toBe(0);
  expect(readFileSync(join(r.ws, 'src/calc.txt'), 'utf8')).toContain('a + b');
}

describe.skipIf(!existsSync(CLAUDE))('Claude Code through the proxy', () => {
  it('runs a long task with bulky tool outputs to completion within budget', { timeout: 300_000 }, async () => {
    const budget = 16_000;
    const r = await rig(budget, 400, 8);
    await runClaudeThrough(r);
    await checkRun(r, budget, 'anthropic');
  });
});

describe.skipIf(!existsSync(CODEX))('Codex CLI through the proxy', () => {
  it('runs a long task with bulky tool outputs to completion within budget', { timeout: 300_000 }, async () => {
    const budget = 20_000;
    const r = await rig(budget, 400, 6);
    await runCodexThrough(r);
    await checkRun(r, budget, 'openai-responses');
  });
});

/**
 * The recall answer in every forwarded request that still holds the model's recall call: the
 * content of the result answering `callId` (Anthropic tool_result / Responses function_call_output).
 */
function recallResults(r: Rig, format: 'anthropic' | 'openai-responses'): { callId: string; contents: string[] } {
  const bodies = r.server.requestsOf('main').map((q) => q.body as Record<string, unknown>);
  const contents: string[] = [];
  let callId = '';
  for (const b of bodies) {
    if (format === 'anthropic') {
      for (const m of b['messages'] as { role: string; content: unknown }[]) {
        if (!Array.isArray(m.content)) continue;
        for (const blk of m.content as Record<string, unknown>[]) {
          if (blk['type'] === 'tool_result' && RECALL_CALL_RE.test(String(blk['tool_use_id']))) {
            callId = String(blk['tool_use_id']);
            expect(blk['is_error'], 'the agent\'s error flag is gone with its error text').toBeUndefined();
            contents.push(typeof blk['content'] === 'string' ? blk['content'] : JSON.stringify(blk['content']));
          }
        }
      }
    } else {
      for (const it of b['input'] as Record<string, unknown>[]) {
        if (it['type'] === 'function_call_output' && RECALL_CALL_RE.test(String(it['call_id']))) {
          callId = String(it['call_id']);
          contents.push(typeof it['output'] === 'string' ? it['output'] : JSON.stringify(it['output']));
        }
      }
    }
  }
  return { callId, contents };
}

/** The content of the agent's own result for a call, in a request as the agent sent it. */
function agentOwnAnswer(body: Record<string, unknown>, callId: string): string | undefined {
  const blocks = Array.isArray(body['messages'])
    ? (body['messages'] as { content: unknown }[]).flatMap((m) => (Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : []))
    : ((body['input'] as Record<string, unknown>[] | undefined) ?? []);
  const found = blocks.find((b) => (b['type'] === 'tool_result' && b['tool_use_id'] === callId) || (b['type'] === 'function_call_output' && b['call_id'] === callId));
  if (!found) return undefined;
  const v = found['content'] ?? found['output'];
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The model called contextd_recall once; every later request carried the archived originals as that call's result. */
async function checkRecall(r: Rig, format: 'anthropic' | 'openai-responses'): Promise<void> {
  const asked = r.server.requests.filter((q) => q.recalled !== undefined);
  expect(asked, 'the model called contextd_recall').toHaveLength(1);
  const handle = asked[0]?.recalled as string;
  const { callId, contents } = recallResults(r, format);
  expect(callId).toMatch(RECALL_CALL_RE);
  expect(contents.length, 'requests carrying the recall answer').toBeGreaterThan(0);
  // the same answer every time (cache-stable), and it is the archive's originals, not the agent's error
  expect(new Set(contents).size).toBe(1);
  const answer = contents[0] as string;
  console.log(JSON.stringify({ format, handle, answer: answer.slice(0, 300), requestsCarrying: contents.length }));
  expect(answer).toContain(`Originals archived under ${handle}`);
  expect(answer).not.toMatch(/no such tool|unsupported call|not found/i);
  const recalled = await runCli(['recall', handle, '--json', '--state', r.state]);
  expect(recalled.code, recalled.stderr).toBe(0);
  const entry = JSON.parse(recalled.stdout) as { messages: ArchivedMessage[] };
  expect(entry.messages.length).toBeGreaterThan(0);
  // the originals as archived, whole or (past hysteresis × window) cut with a note saying so
  const full = archivedText(entry.messages);
  const shown = answer.slice(answer.indexOf('\n') + 1).replace(/\n\[… cut to about \d+ of \d+ tokens[^\]]*\]$/, '');
  expect(shown.length).toBeGreaterThan(0);
  if (shown.length < answer.length - answer.indexOf('\n') - 1) expect(full.startsWith(shown)).toBe(true);
  else expect(shown).toBe(full);
  // what the agent itself answered the unknown tool with (replaced by the proxy): never the originals
  const agentSent = [...r.agentSide.requestBodies.values()].map((b) => b.toString('utf8')).find((b) => b.includes(callId) && /tool_result|function_call_output/.test(b) && b.indexOf(callId) !== b.lastIndexOf(callId));
  expect(agentSent).toBeDefined();
  const own = agentOwnAnswer(JSON.parse(agentSent as string) as Record<string, unknown>, callId);
  console.log(JSON.stringify({ format, agentOwnAnswer: own }));
  expect(own).toBeDefined();
  expect(own).not.toContain('Originals archived');
  // nothing went upstream to get the answer: the request after the call is the one carrying it
  const callIndex = r.server.requests.findIndex((q) => q.recalled !== undefined);
  const next = r.server.requests.slice(callIndex + 1).find((q) => q.kind === 'main');
  expect(JSON.stringify(next?.body)).toContain(`Originals archived under ${handle}`);
}

describe.skipIf(!existsSync(CLAUDE))('Claude Code through the proxy with the recall tool', () => {
  it('calls contextd_recall with a quoted handle and gets the archived originals back, answered by the proxy', { timeout: 300_000 }, async () => {
    const budget = 16_000;
    const r = await rig(budget, 400, 8, { recall: true });
    await runClaudeThrough(r);
    await checkRun(r, budget, 'anthropic', true);
    await checkRecall(r, 'anthropic');
  });
});

describe.skipIf(!existsSync(CODEX))('Codex CLI through the proxy with the recall tool', () => {
  it('calls contextd_recall with a quoted handle and gets the archived originals back, answered by the proxy', { timeout: 300_000 }, async () => {
    const budget = 20_000;
    const r = await rig(budget, 400, 6, { recall: true });
    await runCodexThrough(r);
    await checkRun(r, budget, 'openai-responses', true);
    await checkRecall(r, 'openai-responses');
  });
});
