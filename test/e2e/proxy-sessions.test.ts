/**
 * Proxied conversations as sessions of the spawned daemon: linked to the tailed transcript of
 * the same agent session, harvested into warm templates when idle or on session.end (one
 * harvest per agent session, never two, never a credential), and compacted on request by
 * session.compact — applied to the conversation's next request and recorded in the plan log.
 * The provider is a scripted upstream on a real socket (test/proxy/upstream.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ContextdClient } from '../../src/ipc/client.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import { PlanLog, openDb } from '../../src/store/index.js';
import { generateTranscript } from '../fixtures/transcripts.js';
import { ScriptedUpstream } from '../proxy/upstream.js';
import { filesText } from '../proxy/helpers.js';
import { runCli, spawnDaemon, type SpawnedDaemon } from './spawn.js';

type Json = Record<string, unknown>;
const KEY = 'sk-e2e-proxied-CREDENTIAL-0a1b2c3d4e5f';
// Planted, valid-looking credential (not real).
const AWS = 'AKIAIOSFODNN7EXAMPLQ';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Rig {
  dir: string;
  watch: string;
  state: string;
  socket: string;
  daemon: SpawnedDaemon;
  upstream: ScriptedUpstream;
  proxyUrl: string;
  client: ContextdClient;
}

async function rig(config: Json): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-proxied-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const watch = join(dir, 'watch');
  const state = join(dir, 'state');
  mkdirSync(watch);
  const upstream = new ScriptedUpstream();
  const upstreamUrl = await upstream.start();
  cleanups.push(() => upstream.close());
  const socket = join(dir, 'contextd.sock');
  const configFile = join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ ...config, proxy: { listen: '127.0.0.1:0', upstreams: { anthropic: upstreamUrl, openai: upstreamUrl } } }));
  const daemon = await spawnDaemon(['--config', configFile, '--watch', watch, '--socket', socket, '--state', state]);
  cleanups.push(async () => {
    if (daemon.proc.exitCode === null) {
      daemon.proc.kill('SIGKILL');
      await daemon.exited;
    }
  });
  const listening = await daemon.waitForLog((l) => l.msg === 'proxy listening', 10_000, 'proxy listening');
  const client = new ContextdClient({ socketPath: socket, clientInfo: { name: 'e2e', version: '1' }, reconnect: false });
  await client.connect();
  cleanups.push(() => client.close());
  return { dir, watch, state, socket, daemon, upstream, proxyUrl: `http://127.0.0.1:${String(listening['port'])}`, client };
}

async function post(r: Rig, path: string, body: Json, headers: Record<string, string> = {}): Promise<Json> {
  const res = await fetch(`${r.proxyUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  await res.text();
  return JSON.parse(r.upstream.requests.at(-1)?.body ?? '{}') as Json;
}

/** The demo session (a bug hunt with bulky outputs) as Chat Completions messages, with a credential in one prompt. */
function demoMessages(variant: string, rounds: number): Json[] {
  return demoTranscript({ rounds, variant }).map(({ timestamp: _t, ...m }, i) => (i === 1 ? { ...m, content: `${m.content}\nexport AWS_ACCESS_KEY_ID=${AWS}` } : m));
}

/** Send a conversation as an agent would: every request the whole list so far, at each assistant turn. */
async function converse(r: Rig, messages: readonly Json[], requests: number): Promise<Json> {
  const cuts = messages.flatMap((m, i) => (m['role'] === 'assistant' ? [i] : [])).filter((_, k, all) => k % Math.max(1, Math.floor(all.length / requests)) === 0);
  let last: Json = {};
  for (const cut of [...cuts.slice(-requests), messages.length]) last = await post(r, '/v1/chat/completions', { model: 'gpt-test', messages: messages.slice(0, cut) });
  return last;
}

interface StatusSession {
  sessionId: string;
  source: string;
  linkedSession: string | null;
}

describe('proxied conversations as daemon sessions', () => {
  it('links to the tailed transcript, harvests once per agent session (idle or session.end), and stores no credential', { timeout: 120_000 }, async () => {
    // idle long enough for the status calls below on a loaded machine, short enough to wait for
    const r = await rig({ idleTimeoutMs: 8_000, budgetTokens: 400_000 });
    // 1. an agent session seen both ways: its transcript tailed, its requests through the proxy
    const t = generateTranscript('claude-code', { seed: 4, turns: 3 });
    writeFileSync(join(r.watch, t.fileName), t.jsonl);
    const agentId = t.facts.sessionId;
    await r.daemon.waitForLog((l) => l.msg === 'session opened' && l['sessionId'] === agentId, 20_000, 'tailed session opened');
    const claudeBody = { model: 'claude-test', max_tokens: 100, system: 'You are a coding agent.', tools: [{ name: 'Bash', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'fix the date parser test' }] };
    await post(r, '/v1/messages', claudeBody, { 'x-claude-code-session-id': agentId });
    const status = (await r.client.status()) as unknown as { sessions: StatusSession[] };
    const proxied = status.sessions.find((s) => s.source === 'proxy');
    const tailed = status.sessions.find((s) => s.sessionId === agentId);
    expect(proxied?.linkedSession).toBe(agentId);
    expect(tailed?.linkedSession).toBe(proxied?.sessionId);
    expect((await r.client.headroom(proxied?.sessionId ?? '')).linkedSession).toBe(agentId);
    expect((await r.client.headroom(agentId)).linkedSession).toBe(proxied?.sessionId);
    const [json, human] = await Promise.all([runCli(['status', '--json', '--socket', r.socket]), runCli(['status', '--socket', r.socket])]);
    expect((JSON.parse(json.stdout) as { sessions: StatusSession[] }).sessions.find((s) => s.source === 'proxy')?.linkedSession).toBe(agentId);
    expect(human.stdout).toContain(`linked ${agentId}`);

    // 2. a conversation only seen through the proxy, ended by session.end
    await converse(r, demoMessages('ended', 6), 3);
    const ended = (await r.client.status()).sessions.find((s) => s.sessionId !== proxied?.sessionId && (s as unknown as StatusSession).source === 'proxy')?.sessionId as string;
    expect(ended).toBeDefined();
    expect((await r.client.endSession(ended, 'success')).harvested).toBe(1);

    // 3. another one that goes idle
    await converse(r, demoMessages('idle', 6), 3);
    const idle = (await r.client.status()).sessions.find((s) => ![proxied?.sessionId, ended].includes(s.sessionId) && (s as unknown as StatusSession).source === 'proxy')?.sessionId as string;
    expect(idle).toBeDefined();
    await r.daemon.waitForLog((l) => l.msg === 'proxied conversation harvested' && l['sessionId'] === idle, 30_000, 'idle proxied conversation harvested');
    await r.daemon.waitForLog((l) => l.msg === 'idle session harvested' && l['sessionId'] === agentId, 30_000, 'tailed session harvested');
    await r.daemon.waitForLog((l) => l.msg === 'session closed' && l['sessionId'] === proxied?.sessionId, 30_000, 'linked proxied conversation closed');
    await r.daemon.waitForLog((l) => l.msg === 'session closed' && l['sessionId'] === ended, 30_000, 'ended proxied conversation closed');

    // one harvest per agent session: the linked conversation through its transcript, the ended one once
    const harvests = r.daemon.logs.filter((l) => l.msg === 'session harvested' && l['component'] === 'warm').map((l) => l['sessionId']);
    expect(harvests.filter((id) => id === agentId)).toHaveLength(1);
    expect(harvests).not.toContain(proxied?.sessionId);
    expect(harvests.filter((id) => id === ended)).toHaveLength(1);
    expect(harvests.filter((id) => id === idle)).toHaveLength(1);
    const idleHarvest = r.daemon.logs.find((l) => l.msg === 'session harvested' && l['component'] === 'warm' && l['sessionId'] === idle);
    expect(idleHarvest?.['templateId']).toEqual(expect.any(String));

    r.daemon.proc.kill('SIGTERM');
    expect((await r.daemon.exited).code).toBe(0);
    const list = JSON.parse((await runCli(['warm', 'list', '--json', '--state', r.state])).stdout) as { templates: unknown[] };
    expect(list.templates.length).toBeGreaterThan(0);
    expect(JSON.stringify(list)).toMatch(/computeTotal|billing|rounding/);
    // the credentials went upstream, and nowhere else
    expect(r.upstream.requests.some((q) => q.body.includes(AWS))).toBe(true);
    const stored = filesText(r.state);
    expect(stored).not.toContain(AWS);
    expect(stored).not.toContain(KEY);
    expect(JSON.stringify(r.daemon.logs)).not.toContain(KEY);
  });

  it('session.compact on a proxied conversation compacts its next request and records the plan', { timeout: 120_000 }, async () => {
    const r = await rig({ budgetTokens: 400_000 });
    const messages = demoMessages('compact', 8);
    const before = await converse(r, messages.slice(0, -2), 2);
    expect(JSON.stringify(before)).not.toContain('[contextd recall h_');
    const sessionId = (await r.client.status()).sessions[0]?.sessionId as string;
    const tokensBefore = (await r.client.headroom(sessionId)).tokens;
    // a dry run changes nothing
    const dry = await r.client.compact(sessionId, { targetHeadroom: 0.99, dryRun: true });
    expect(dry.edits.length).toBeGreaterThan(0);
    expect((await r.client.headroom(sessionId)).tokens).toBe(tokensBefore);
    const plan = await r.client.compact(sessionId, { targetHeadroom: 0.99 });
    expect(plan.edits.length).toBeGreaterThan(0);
    expect((await r.client.headroom(sessionId)).tokens).toBeLessThan(tokensBefore);
    // the next request carries the summaries, with the handles the plan quotes, and valid pairs
    const after = await post(r, '/v1/chat/completions', { model: 'gpt-test', messages });
    const text = JSON.stringify(after);
    for (const e of plan.edits) expect(text).toContain(`[contextd recall ${e.handle}]`);
    expect(text).toContain(String(messages.at(-1)?.['content']).slice(0, 40));
    await r.daemon.waitForLog((l) => l.msg === 'proxy plan applied' && l['planId'] === plan.planId && l['mode'] === 'manual', 10_000, 'plan applied log');
    r.daemon.proc.kill('SIGTERM');
    expect((await r.daemon.exited).code).toBe(0);
    const db = openDb(join(r.state, 'contextd.db'));
    try {
      const stored = new PlanLog(db).get(plan.planId);
      expect(stored?.status).toBe('applied');
      expect(stored?.sessionId).toBe(sessionId);
    } finally {
      db.close();
    }
  });
});
