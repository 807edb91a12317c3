import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import type { DaemonStatus } from '../../src/daemon/api.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { openDb } from '../../src/store/index.js';
import { stateDbPath } from '../../src/store/paths.js';
import { TemplateStore } from '../../src/store/templates.js';
import { harvestFile } from '../../src/harvest/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { until } from './helpers.js';

const dirs: string[] = [];
const daemons: Daemon[] = [];
const clients: ContextdClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Row = DaemonStatus['sessions'][number];
const NAMES = ['a', 'b', 'c', 'd'] as const;

async function start(dir: string, maxSessionTokens: number, state = join(dir, 'state'), idleReleaseMs?: number): Promise<ContextdClient> {
  const memory = { maxSessionTokens, ...(idleReleaseMs !== undefined ? { idleReleaseMs } : {}) };
  const options = resolveDaemonOptions({}, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state, budgetTokens: 1_000_000, memory });
  const daemon = new Daemon(options, { logger: pino({ level: 'silent' }) });
  daemons.push(daemon);
  await daemon.start();
  const client = new ContextdClient({ socketPath: options.socketPath, clientInfo: { name: 'test', version: '1' }, reconnect: false });
  clients.push(client);
  await client.connect();
  return client;
}

async function status(c: ContextdClient): Promise<{ heldTokens: number; rows: Map<string, Row> }> {
  const s = (await c.status()) as unknown as DaemonStatus;
  return { heldTokens: s.heldTokens, rows: new Map(s.sessions.map((r) => [r.file.replace(/^.*\//, '').replace('.jsonl', ''), r])) };
}

/** Four transcripts of distinct sizes in `dir/sessions`. */
function writeSessions(dir: string): void {
  mkdirSync(join(dir, 'sessions'));
  NAMES.forEach((n, i) => writeFileSync(join(dir, 'sessions', `${n}.jsonl`), demoTranscriptJsonl({ rounds: 5 + i, variant: n })));
}

const APPENDED = `${JSON.stringify({ role: 'user', content: 'One more thing: also round the tax line to 2 decimals and say which tests cover it.' })}\n`;

describe('memory budget of tailed session models', () => {
  it('releases the least recently active sessions, rebuilds them on append or request to the figures they would have had, and keeps a session with an open plan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-membudget-'));
    dirs.push(dir);
    writeSessions(dir);

    // Reference: no bound. Every session stays in memory.
    const free = await start(dir, 0);
    const ref = await until('four sessions', async () => {
      const s = await status(free);
      return s.rows.size === 4 ? s : undefined;
    });
    for (const r of ref.rows.values()) expect(r.inMemory).toBe(true);
    const tokens = NAMES.map((n) => ref.rows.get(n)?.tokens ?? 0);
    expect(Math.min(...tokens)).toBeGreaterThan(500);
    await free.close();
    await daemons.pop()?.stop();

    // Room for the two largest sessions, not three.
    const sorted = [...tokens].sort((x, y) => y - x);
    const budget = (sorted[0] as number) + (sorted[1] as number) + 1;
    const c = await start(dir, budget);
    const first = await until('four sessions, some released', async () => {
      const s = await status(c);
      return s.rows.size === 4 && [...s.rows.values()].some((r) => !r.inMemory) ? s : undefined;
    });
    expect(first.heldTokens).toBeLessThanOrEqual(budget);
    const held = [...first.rows.values()].filter((r) => r.inMemory);
    expect(first.heldTokens).toBe(held.reduce((n, r) => n + r.tokens, 0));
    // The released ones are the least recently active, and status still shows their figures.
    const released = [...first.rows.entries()].filter(([, r]) => !r.inMemory);
    for (const [n, r] of released) {
      for (const h of held) expect(r.lastActivityAt).toBeLessThanOrEqual(h.lastActivityAt);
      expect(r.tokens).toBe(ref.rows.get(n)?.tokens);
      expect(r.sections).toBe(ref.rows.get(n)?.sections);
    }

    // A request on a released session rebuilds it transparently, to the same figures.
    const [askedName, asked] = released[0] as [string, Row];
    const h = await c.headroom(asked.sessionId);
    expect(h.tokens).toBe(ref.rows.get(askedName)?.tokens);
    expect(h.sections).toBe(ref.rows.get(askedName)?.sections);
    const afterAsk = await status(c);
    expect(afterAsk.rows.get(askedName)?.inMemory).toBe(true);
    expect(afterAsk.heldTokens).toBeLessThanOrEqual(budget);

    // An open plan pins its session: compact it (the plan awaits an ack), then make the others churn.
    const plan = await c.compact(asked.sessionId, { targetHeadroom: 0.9999 });
    expect(plan.edits.length).toBeGreaterThan(0);
    const others = NAMES.filter((n) => n !== askedName);
    for (const n of others) {
      const row = (await status(c)).rows.get(n) as Row;
      if (!row.inMemory) await c.headroom(row.sessionId);
    }
    const pinned = await status(c);
    expect(pinned.rows.get(askedName)?.inMemory).toBe(true);
    expect(pinned.rows.get(askedName)?.openPlans).toBe(1);
    expect(pinned.heldTokens).toBeLessThanOrEqual(budget + (ref.rows.get(askedName)?.tokens ?? 0));

    // An append to a released session rebuilds it and applies the new line on top.
    const target = await until('a released session', async () => {
      const s = await status(c);
      return [...s.rows.entries()].find(([n, r]) => !r.inMemory && n !== askedName);
    });
    const [appendName] = target;
    appendFileSync(join(dir, 'sessions', `${appendName}.jsonl`), APPENDED);
    const appended = await until('the appended session rebuilt', async () => {
      const r = (await status(c)).rows.get(appendName);
      return r?.inMemory === true && r.tokens > (ref.rows.get(appendName)?.tokens ?? 0) ? r : undefined;
    });
    await c.close();
    await daemons.pop()?.stop();

    // What it would have had: the same file read by a daemon with no bound.
    const again = await start(dir, 0);
    const truth = await until('four sessions', async () => {
      const s = await status(again);
      return s.rows.size === 4 && s.rows.get(appendName)?.tokens === appended.tokens ? s : undefined;
    });
    expect(appended.sections).toBe(truth.rows.get(appendName)?.sections);
    expect(appended.sessionId).toBe(truth.rows.get(appendName)?.sessionId);
  }, 60_000);

  it('releases every session idle past memory.idleReleaseMs with no bound on the total, and one rebuilt on request gives the same figures and plan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-idlerelease-'));
    dirs.push(dir);
    writeSessions(dir);
    const planOf = async (c: ContextdClient, sessionId: string) => {
      const p = await c.compact(sessionId, { targetHeadroom: 0.9999, dryRun: true });
      return { tokensAfter: p.tokensAfter, edits: p.edits.map((e) => ({ reason: e.reason, replaces: e.replaces, handle: e.handle, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter })) };
    };

    // Reference: never released (idle release off).
    const kept = await start(dir, 0, join(dir, 'state'), 0);
    const ref = await until('four sessions', async () => {
      const s = await status(kept);
      return s.rows.size === 4 ? s : undefined;
    });
    const refPlan = await planOf(kept, ref.rows.get('c')?.sessionId as string);
    expect(refPlan.edits.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1_500));
    expect([...(await status(kept)).rows.values()].every((r) => r.inMemory)).toBe(true);
    await kept.close();
    await daemons.pop()?.stop();

    // Idle release after 1 s (looked for every second): every session leaves memory, no budget needed.
    const c = await start(dir, 0, join(dir, 'state'), 1_000);
    const idle = await until('every session released', async () => {
      const s = await status(c);
      return s.rows.size === 4 && [...s.rows.values()].every((r) => !r.inMemory) ? s : undefined;
    });
    expect(idle.heldTokens).toBe(0);
    for (const [n, r] of idle.rows) expect([r.tokens, r.sections]).toEqual([ref.rows.get(n)?.tokens, ref.rows.get(n)?.sections]);
    // Asked for, it is rebuilt from its transcript: the same figures and the same plan.
    const id = ref.rows.get('c')?.sessionId as string;
    const h = await c.headroom(id);
    expect([h.tokens, h.sections]).toEqual([ref.rows.get('c')?.tokens, ref.rows.get('c')?.sections]);
    expect(await planOf(c, id)).toEqual(refPlan);
    expect((await status(c)).rows.get('c')?.inMemory).toBe(true);
  }, 60_000);

  it('releases a session whose agent applied a plan (partly), and rebuilds it on request with its edits: the same sections, figures and next plan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-edited-'));
    dirs.push(dir);
    writeSessions(dir);
    const c = await start(dir, 0, join(dir, 'state'), 1_000);
    const id = (await until('four sessions', async () => {
      const s = await status(c);
      return s.rows.size === 4 ? s : undefined;
    })).rows.get('d')?.sessionId as string;
    // The agent applies some edits of a plan over the socket.
    const plan = await c.compact(id, { targetHeadroom: 0.9999 });
    expect(plan.edits.length).toBeGreaterThan(1);
    await c.ack({ planId: plan.planId, applied: true, editIds: plan.edits.slice(1).map((e) => e.editId) });
    const sections = await c.sections(id);
    const h = await c.headroom(id);
    const next = await c.compact(id, { targetHeadroom: 0.9999, dryRun: true });
    expect(sections.some((x) => x.compacted)).toBe(true);
    // Idle: released like any session (its edits no longer pin it in memory), then rebuilt on request.
    await until('the edited session released', async () => ((await status(c)).rows.get('d')?.inMemory === false ? true : undefined));
    expect(await c.sections(id)).toEqual(sections);
    expect(await c.headroom(id)).toEqual(h);
    const again = await c.compact(id, { targetHeadroom: 0.9999, dryRun: true });
    expect(again.edits).toEqual(next.edits);
  }, 60_000);

  it('session.end on a released session harvests the whole session, as it would have in memory', async () => {
    const harvested = async (maxSessionTokens: number): Promise<{ harvested: number; inMemory: boolean }> => {
      const dir = mkdtempSync(join(tmpdir(), 'contextd-membudget-'));
      dirs.push(dir);
      writeSessions(dir);
      const c = await start(dir, maxSessionTokens);
      const s = await until('four sessions', async () => {
        const st = await status(c);
        return st.rows.size === 4 && (maxSessionTokens === 0 || [...st.rows.values()].some((r) => !r.inMemory)) ? st : undefined;
      });
      const row = [...s.rows.values()].sort((x, y) => x.lastActivityAt - y.lastActivityAt)[0] as Row;
      const r = await c.endSession(row.sessionId, 'success');
      await c.close();
      await daemons.pop()?.stop();
      return { harvested: r.harvested, inMemory: row.inMemory };
    };
    const free = await harvested(0);
    const bounded = await harvested(1);
    expect(free.inMemory).toBe(true);
    expect(bounded.inMemory).toBe(false);
    expect(free.harvested).toBeGreaterThan(0);
    expect(bounded.harvested).toBe(free.harvested);
  }, 60_000);

  it('under sustained appends the models held stay within the budget (no second copy of a session is kept), and every session, released or not, is harvested into the template an offline harvest of its file makes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-membudget-'));
    dirs.push(dir);
    writeSessions(dir);
    const first = await start(dir, 0, join(dir, 'probe'));
    const sizes = await until('four sessions', async () => {
      const s = await status(first);
      return s.rows.size === 4 ? [...s.rows.values()].map((r) => r.tokens) : undefined;
    });
    await first.close();
    await daemons.pop()?.stop();

    // Room for about two sessions: every append to a released one rebuilds it and releases another.
    const budget = Math.max(...sizes) * 2;
    const c = await start(dir, budget);
    await until('four sessions', async () => ((await status(c)).rows.size === 4 ? true : undefined));
    let released = 0;
    for (let round = 0; round < 12; round++) {
      for (const n of NAMES) {
        const before = (await status(c)).rows.get(n)?.tokens ?? 0;
        appendFileSync(join(dir, 'sessions', `${n}.jsonl`), `${JSON.stringify({ role: 'user', content: `Round ${round} for ${n}: also check the ${round}th invoice line and tell me which test covers it.` })}\n`);
        const after = await until(`append ${round} to ${n}`, async () => {
          const s = await status(c);
          return (s.rows.get(n)?.tokens ?? 0) > before ? s : undefined;
        });
        // What the daemon holds is what it counts: the budget, whatever was appended.
        expect(after.heldTokens).toBeLessThanOrEqual(budget);
        expect(after.heldTokens).toBe([...after.rows.values()].filter((r) => r.inMemory).reduce((t, r) => t + r.tokens, 0));
        released += [...after.rows.values()].filter((r) => !r.inMemory).length;
      }
    }
    expect(released).toBeGreaterThan(0);
    const ended = new Map<string, boolean>();
    for (const n of NAMES) {
      const row = (await status(c)).rows.get(n) as Row;
      ended.set(n, row.inMemory);
      expect((await c.endSession(row.sessionId, 'success')).harvested).toBe(1);
    }
    // Both kinds were harvested: from a model in memory and from a released one.
    expect(new Set(ended.values()).size).toBe(2);
    await c.close();
    await daemons.pop()?.stop();

    // The same files harvested offline, in the same order, into a store of their own.
    const counter = createTokenCounter();
    const offline = new TemplateStore(openDb(join(dir, 'offline.db')));
    for (const n of NAMES) await harvestFile(join(dir, 'sessions', `${n}.jsonl`), { store: offline, tokenCounter: counter, logger: pino({ level: 'silent' }) }, 'success');
    const daemonStore = new TemplateStore(openDb(stateDbPath(join(dir, 'state'))));
    const content = (store: TemplateStore) =>
      store
        .list()
        .map((t) => store.get(t.id))
        .map((t) => ({
          name: t?.name,
          task: t?.task,
          taskType: t?.taskType,
          repo: t?.repo,
          fingerprint: t?.fingerprint,
          systemDigest: t?.systemDigest,
          sessions: t?.sessions.map((x) => x.source),
          items: t?.items.map((i) => ({ kind: i.kind, category: i.category, text: i.text, data: i.data, evidence: i.evidence })),
          knowledge: t?.knowledge.map((k) => k.text),
        }))
        .sort((a, b) => String(a.fingerprint).localeCompare(String(b.fingerprint)));
    const got = content(daemonStore);
    expect(got.length).toBeGreaterThan(0);
    expect(got.flatMap((t) => t.sessions).length).toBe(4);
    expect(got).toEqual(content(offline));
    daemonStore.db.close();
    offline.db.close();
  }, 120_000);
});
