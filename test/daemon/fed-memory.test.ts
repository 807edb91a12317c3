import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import type { DaemonStatus } from '../../src/daemon/api.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { RpcError, RpcErrorCode } from '../../src/ipc/errors.js';
import Database from 'better-sqlite3';
import { type TokenCounter } from '../../src/model/tokens.js';
import { failingCounter, until } from './helpers.js';

/**
 * Sessions fed over the socket (session.sync) under the memory budget: bounded in number
 * (memory.maxFedSessions), released when idle or when their client is gone, and rebuilt by the
 * agent's next list with nothing lost. A daemon in this process (its clock injected), real
 * sockets and a real SQLite state.
 */

const dirs: string[] = [];
const daemons: Daemon[] = [];
const clients: ContextdClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const RELEASE_AFTER_MS = 1_000;

/** A daemon whose clock is `clock.t`, with room for `maxFedSessions` fed sessions (default: the default). */
async function start(maxFedSessions?: number, tokenCounter?: TokenCounter): Promise<{ clock: { t: number }; connect: () => Promise<ContextdClient>; state: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-fedmem-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'sessions'));
  const clock = { t: 1_000_000 };
  const memory = { maxSessionTokens: 0, releaseAfterMs: RELEASE_AFTER_MS, idleReleaseMs: 0, ...(maxFedSessions !== undefined ? { maxFedSessions } : {}) };
  const options = resolveDaemonOptions({}, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state'), budgetTokens: 1_000_000, memory });
  const daemon = new Daemon(options, { logger: pino({ level: 'silent' }), now: () => clock.t, ...(tokenCounter ? { tokenCounter } : {}) });
  daemons.push(daemon);
  await daemon.start();
  const connect = async (): Promise<ContextdClient> => {
    const c = new ContextdClient({ socketPath: options.socketPath, clientInfo: { name: 'agent', version: '1' }, reconnect: false });
    clients.push(c);
    await c.connect();
    return c;
  };
  return { clock, connect, state: join(dir, 'state') };
}

/** How many messages the harvest of `sessionId` recorded (undefined: not harvested yet). */
function harvestedCount(state: string, sessionId: string): number | undefined {
  const db = new Database(join(state, 'contextd.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare(`SELECT message_count AS n FROM harvested_sessions WHERE session_id = ?`).get(sessionId) as { n: number } | undefined)?.n;
  } finally {
    db.close();
  }
}

type Row = DaemonStatus['sessions'][number];
async function status(c: ContextdClient): Promise<{ rows: Map<string, Row>; load: DaemonStatus['load'] }> {
  const s = (await c.status()) as unknown as DaemonStatus;
  return { rows: new Map(s.sessions.map((r) => [r.sessionId, r])), load: s.load };
}

type Wire = { role: string; content: string; tool_calls?: unknown[]; tool_call_id?: string; isSummary?: boolean };

/** An agent's list: tool reads of logs (what plans compact), `tag` making each session's own. */
function list(tag: string, reads = 12): Wire[] {
  return [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: `${tag}: read the logs; never delete them` },
    ...Array.from({ length: reads }, (_, i): Wire[] => [
      { role: 'assistant', content: '', tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'cat', arguments: `{"f":"${tag}-log${i}"}` } }] },
      { role: 'tool', tool_call_id: `c${i}`, content: `${tag} log ${i} line `.repeat(300) },
    ]).flat(),
    { role: 'user', content: 'what failed?' },
  ];
}

type Plan = { planId: string; edits: { editId: string; handle: string; messageRange: { start: number; end: number }; summary: { role: string; content: string } }[] };

/** `messages` with the plan's edits applied as the hermes plugin does: each range replaced by its summary, marked. */
function applied(messages: readonly Wire[], plan: Plan): Wire[] {
  const out = [...messages];
  for (const e of [...plan.edits].sort((a, b) => b.messageRange.start - a.messageRange.start)) {
    out.splice(e.messageRange.start, e.messageRange.end - e.messageRange.start + 1, { role: e.summary.role, content: e.summary.content, isSummary: true });
  }
  return out;
}

async function rpcError(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RpcError) return err;
    throw err;
  }
  throw new Error('expected an RPC error');
}

describe('sessions fed over the socket under the memory budget', () => {
  it('over memory.maxFedSessions releases the least recently synced idle ones; a later sync rebuilds one with nothing lost', async () => {
    const { clock, connect, state } = await start(2);
    const agent = await connect();
    const budgetTokens = 12_000;

    // Session a: synced, compacted, the plan applied and acked, the applied list synced again.
    const first = list('a');
    await agent.sync({ sessionId: 'a', messages: first, budgetTokens });
    const plan = (await agent.compact('a')) as unknown as Plan;
    expect(plan.edits.length).toBeGreaterThan(0);
    await agent.ack({ planId: plan.planId, applied: true });
    const after = applied(first, plan);
    const resynced = await agent.sync({ sessionId: 'a', messages: after, budgetTokens });
    expect(resynced.rebuilt).toBe(true);
    const ref = resynced.headroom;
    const refSections = await agent.sections('a');
    await agent.close(); // a's agent goes away

    // b and c by another agent, the clock moving between syncs: a is released for c (its client is gone).
    const other = await connect();
    clock.t += 10;
    await other.sync({ sessionId: 'b', messages: list('b', 3), budgetTokens });
    expect((await status(other)).rows.get('a')?.inMemory).toBe(true);
    clock.t += 10;
    await other.sync({ sessionId: 'c', messages: list('c', 3), budgetTokens });
    let s = await status(other);
    expect(s.rows.get('a')).toMatchObject({ inMemory: false, fed: true, tokens: ref.tokens });
    expect(s.load.fedSessionsInMemory).toBe(2);
    expect([...s.rows.values()].filter((r) => r.inMemory).map((r) => r.sessionId).sort()).toEqual(['b', 'c']);

    // A request that reads a's model is told to sync it first.
    const back = await connect();
    const released = await rpcError(back.headroom('a'));
    expect(released.code).toBe(RpcErrorCode.UNAVAILABLE);
    expect(released.message).toMatch(/released from memory.*session\.sync/);

    // a's agent comes back once b and c are idle: the least recently synced (b) makes room.
    clock.t += RELEASE_AFTER_MS;
    const rebuilt = await back.sync({ sessionId: 'a', messages: after, budgetTokens });
    expect(rebuilt.rebuilt).toBe(true);
    expect(rebuilt.headroom.tokens).toBe(ref.tokens);
    expect(rebuilt.headroom.sections).toBe(ref.sections);
    expect(await back.sections('a')).toEqual(refSections);
    s = await status(back);
    expect(s.rows.get('b')?.inMemory).toBe(false);
    // b's agent is still connected, only quiet: what it sent is harvested at the release all the
    // same, as its agent may exit without session.end (the idle harvest would find nothing).
    expect(await until('b harvested at its release', async () => harvestedCount(state, 'b'))).toBe(list('b', 3).length);
    expect(s.rows.get('c')?.inMemory).toBe(true);
    expect(s.rows.get('a')?.inMemory).toBe(true);
    // What only the daemon held is still there: the originals behind the summaries the list carries.
    const e = plan.edits[0] as Plan['edits'][number];
    const originals = await back.recall('a', e.handle);
    expect(originals.messages.length).toBeGreaterThan(0);
    // ...and the session is planned from as before: the next list appends.
    const more = await back.sync({ sessionId: 'a', messages: [...after, { role: 'assistant', content: 'the parser failed' }], budgetTokens });
    expect(more.rebuilt).toBe(false);
  });

  it('refuses a sync beyond memory.maxFedSessions with a typed error naming the limit while every fed session is connected and busy, changing nothing', async () => {
    const { clock, connect } = await start(2);
    const agent = await connect();
    await agent.sync({ sessionId: 'a', messages: list('a', 2) });
    clock.t += 10;
    await agent.sync({ sessionId: 'b', messages: list('b', 2) });
    clock.t += RELEASE_AFTER_MS - 20; // a synced 990 ms ago: still busy

    const refused = await rpcError(agent.sync({ sessionId: 'c', messages: list('c', 2) }));
    expect(refused.code).toBe(RpcErrorCode.TOO_MANY_SESSIONS);
    expect(refused.message).toMatch(/memory\.maxFedSessions = 2/);
    expect(refused.data).toMatchObject({ limit: 2, sessionId: 'c' });
    const s = await status(agent);
    expect(s.rows.has('c')).toBe(false);
    expect(s.rows.get('a')?.inMemory).toBe(true);
    expect(s.rows.get('b')?.inMemory).toBe(true);

    // Once a is idle for memory.releaseAfterMs, the same sync releases it and goes through.
    clock.t += 20;
    const ok = await agent.sync({ sessionId: 'c', messages: list('c', 2) });
    expect(ok.rebuilt).toBe(true);
    const later = await status(agent);
    expect(later.rows.get('a')?.inMemory).toBe(false);
    expect(later.rows.get('b')?.inMemory).toBe(true);
    expect(later.load.fedSessionsInMemory).toBe(2);
  });

  it('a sync whose list cannot be applied leaves an empty fed session that the next sync rebuilds', async () => {
    // Injected fault (the one seam that makes applying a list throw): the real tokenizer, except
    // that while `down` it throws on the texts marked "broken", as tiktoken does when it cannot load.
    let down = false;
    const counter = failingCounter(() => down, 'broken');
    const { connect } = await start(undefined, counter);
    const agent = await connect();
    const messages = list('broken', 2);
    down = true;
    const failed = await rpcError(agent.sync({ sessionId: 'x', messages }));
    expect(failed.code).toBe(RpcErrorCode.UNAVAILABLE);
    expect(failed.message).toMatch(/could not be applied.*EMFILE.*send it again/);
    const s = await status(agent);
    expect(s.rows.get('x')).toMatchObject({ fed: true, tokens: 0 });
    down = false;
    const again = await agent.sync({ sessionId: 'x', messages });
    expect(again.rebuilt).toBe(true);
    const ref = await (await connect()).sync({ sessionId: 'ref', messages });
    expect(again.headroom.tokens).toBe(ref.headroom.tokens);
    expect((await agent.sync({ sessionId: 'x', messages: [...messages, { role: 'assistant', content: 'done' }] })).rebuilt).toBe(false);
  });

  it('a tailed session whose lines could not be applied, then fed over the socket, does not carry that failure', async () => {
    // Injected fault as above: the tokenizer throws on the transcript's texts marked "tailed-new".
    const counter = failingCounter(() => true, 'tailed-new');
    const { clock, connect, state } = await start(undefined, counter);
    const file = join(state, '..', 'sessions', 't.jsonl');
    const chat = (role: string, content: string): string => `${JSON.stringify({ role, content })}\n`;
    writeFileSync(file, chat('user', 'read the parser logs and tell me what failed'));
    const agent = await connect();
    const id = await until('the transcript read', async () => [...(await status(agent)).rows.values()].find((r) => r.file === file)?.sessionId);
    appendFileSync(file, chat('assistant', 'tailed-new: the parser failed on line 12'));
    await until('its lines failed', async () => ((await status(agent)).rows.get(id)?.failure ? true : undefined));
    // The agent now feeds the session over the socket, then goes; the session is released.
    await agent.sync({ sessionId: id, messages: list('t', 1) });
    await agent.close();
    clock.t += RELEASE_AFTER_MS;
    const other = await connect();
    const row = await until('the fed session released', async () => {
      const r = (await status(other)).rows.get(id);
      return r?.inMemory === false ? r : undefined;
    });
    expect(row.fed).toBe(true);
    expect(row.failure).toBeNull();
  });

  it('releases a fed session whose client vanished once it had no sync for memory.releaseAfterMs, harvesting what it held first, and keeps one whose client is connected', async () => {
    const { clock, connect, state } = await start();
    const gone = await connect();
    const stays = await connect();
    await gone.sync({ sessionId: 'gone', messages: list('gone', 2) });
    await stays.sync({ sessionId: 'stays', messages: list('stays', 2) });
    await gone.close();
    clock.t += RELEASE_AFTER_MS;
    const s = await until('the session of the vanished client released', async () => {
      const st = await status(stays);
      return st.rows.get('gone')?.inMemory === false ? st : undefined;
    });
    expect(s.rows.get('stays')?.inMemory).toBe(true);
    expect(s.load.fedSessionsInMemory).toBe(1);
    // Its agent's messages were the only copy: harvested at the release, all of them (the idle
    // harvest, half an hour on, would find an empty history).
    expect(await until('the released session harvested', async () => harvestedCount(state, 'gone'))).toBe(list('gone', 2).length);
    expect(harvestedCount(state, 'stays')).toBeUndefined();
  });
});
