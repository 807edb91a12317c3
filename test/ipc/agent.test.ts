import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyPlan, runAgent, type ChatMessage } from '../../examples/agent.js';
import { planExpired, unknownSession } from '../../src/ipc/errors.js';
import { defineHandlers } from '../../src/ipc/handlers.js';
import type { WirePlan } from '../../src/ipc/results.js';
import { Resources, waitUntil } from './helpers.js';
import { HEADROOM } from './stubs.js';

const res = new Resources();
afterEach(() => res.closeAll());

function planFor(planId: string, ranges: Array<[number, number]>): WirePlan {
  return {
    planId,
    sessionId: 'ex',
    edits: ranges.map(([start, end], i) => ({
      editId: `e${i + 1}`,
      replaces: [`s${start}`],
      messageRange: { start, end },
      summary: { role: 'user', content: `[contextd] messages ${start}..${end} compacted (handle h-${i + 1})` },
      tokensBefore: 1500,
      tokensAfter: 12,
      reason: 'redundant-tool-output',
    })),
    headroomBefore: 0.1,
    headroomAfter: 0.3,
  };
}

/** A stand-in daemon built from real handlers: it records acks and can answer compact. */
async function fakeDaemon(opts: { failFirstSubscribe?: boolean; pushOnCompact?: boolean; expired?: string[] } = {}) {
  const dir = res.tmpDir();
  const socketPath = path.join(dir, 'd.sock');
  const transcriptPath = path.join(dir, 'sessions', 'agent.jsonl');
  const acks: unknown[] = [];
  const subscribers: string[] = [];
  let subscribeCalls = 0;
  let compactCalls = 0;
  const server = res.server({
    socketPath,
    handlers: defineHandlers({
      'session.subscribe': (p, ctx) => {
        subscribeCalls++;
        if (opts.failFirstSubscribe && subscribeCalls === 1) throw unknownSession(p.transcriptPath ?? '?');
        expect(p.transcriptPath).toBe(transcriptPath);
        subscribers.push(ctx.connectionId);
        return { sessionId: 'ex', headroom: HEADROOM };
      },
      'session.compact': (_p, ctx) => {
        compactCalls++;
        const plan = planFor('p-req', [[2, 4]]);
        // Like the daemon: a requested plan is also pushed to subscribers.
        if (opts.pushOnCompact) server.notify(ctx.connectionId, 'compaction.proposed', plan);
        return plan;
      },
      'compaction.ack': (p) => {
        acks.push(p);
        if (opts.expired?.includes(p.planId)) throw planExpired(p.planId);
        return { ok: true as const };
      },
      'session.end': () => ({ harvested: 1 }),
    }),
  });
  await server.listen();
  return { server, socketPath, transcriptPath, acks, subscribers, counts: () => ({ subscribeCalls, compactCalls }) };
}

const lines = (file: string): ChatMessage[] =>
  fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as ChatMessage) : [];

describe('examples/agent.ts', () => {
  it('applies a pushed plan to its messages and acks the applied edits', async () => {
    const d = await fakeDaemon();
    const logs: string[] = [];
    const run = runAgent({ socketPath: d.socketPath, transcriptPath: d.transcriptPath, turns: 4, toolOutputChars: 500, waitForPlanMs: 10_000, log: (l) => logs.push(l) });
    const total = 2 + 4 * 3;
    await waitUntil(() => lines(d.transcriptPath).length === total && d.subscribers.length === 1, 5000, 'transcript written');
    const transcript = lines(d.transcriptPath);
    expect(transcript[2]?.tool_calls?.[0]?.function.name).toBe('read_file');
    expect(transcript[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_0' });
    // Compact turn 0 (messages 2..4) and turn 1 (5..7).
    expect(d.server.notify(d.subscribers[0] as string, 'compaction.proposed', planFor('p-push', [[2, 4], [5, 7]]))).toBe(true);
    const out = await run;

    expect(d.acks).toEqual([{ planId: 'p-push', applied: true, editIds: ['e1', 'e2'] }]);
    expect(out.plans).toEqual([{ planId: 'p-push', via: 'push', applied: ['e1', 'e2'], skipped: 0 }]);
    expect(out.messages).toHaveLength(total - 4);
    expect(out.messages[2]?.content).toBe('[contextd] messages 2..4 compacted (handle h-1)');
    expect(out.messages[3]?.content).toBe('[contextd] messages 5..7 compacted (handle h-2)');
    expect(out.messages[4]?.tool_calls?.[0]?.id).toBe('call_2');
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
    // The transcript on disk is append-only: it still holds the originals.
    expect(lines(d.transcriptPath)).toHaveLength(total);
    expect(d.counts().compactCalls).toBe(0);
    expect(logs.some((l) => l.startsWith('plan p-push (push): applied 2/2'))).toBe(true);
  });

  it('retries the subscription, and asks with session.compact when nothing is pushed', async () => {
    const d = await fakeDaemon({ failFirstSubscribe: true });
    const out = await runAgent({ socketPath: d.socketPath, transcriptPath: d.transcriptPath, turns: 2, toolOutputChars: 200, waitForPlanMs: 20, log: () => undefined });
    expect(d.counts()).toEqual({ subscribeCalls: 2, compactCalls: 1 });
    expect(d.acks).toEqual([{ planId: 'p-req', applied: true, editIds: ['e1'] }]);
    expect(out.plans[0]).toMatchObject({ planId: 'p-req', via: 'request' });
    expect(out.messages).toHaveLength(2 + 2 * 3 - 2);
  });
});

describe('examples/agent.ts plan bookkeeping', () => {
  it('handles a plan once when it is both returned by session.compact and pushed', async () => {
    const d = await fakeDaemon({ pushOnCompact: true });
    const out = await runAgent({ socketPath: d.socketPath, transcriptPath: d.transcriptPath, turns: 2, toolOutputChars: 200, waitForPlanMs: 20, log: () => undefined });
    expect(d.acks).toHaveLength(1);
    expect(out.plans).toHaveLength(1);
    expect(out.messages).toHaveLength(2 + 2 * 3 - 2);
    expect(out.messages[3]?.tool_calls?.[0]?.id).toBe('call_1');
  });

  it('leaves its messages untouched when the daemon says the plan expired', async () => {
    const d = await fakeDaemon({ expired: ['p-old'] });
    const run = runAgent({ socketPath: d.socketPath, transcriptPath: d.transcriptPath, turns: 3, toolOutputChars: 200, waitForPlanMs: 10_000, log: () => undefined });
    await waitUntil(() => lines(d.transcriptPath).length === 11 && d.subscribers.length === 1, 5000, 'transcript written');
    const conn = d.subscribers[0] as string;
    d.server.notify(conn, 'compaction.proposed', planFor('p-old', [[2, 7]]));
    d.server.notify(conn, 'compaction.proposed', planFor('p-new', [[5, 7]]));
    const out = await run;
    expect(d.acks.map((a) => (a as { planId: string }).planId)).toEqual(['p-old', 'p-new']);
    expect(out.plans.map((p) => p.planId)).toEqual(['p-new']);
    expect(out.messages).toHaveLength(11 - 2);
    expect(out.messages[2]?.tool_calls?.[0]?.id).toBe('call_0');
    expect(out.messages[5]?.content).toBe('[contextd] messages 5..7 compacted (handle h-1)');
  });
});

describe('applyPlan', () => {
  const msgs = (): ChatMessage[] => Array.from({ length: 6 }, (_, i) => ({ role: 'user' as const, content: `m${i}` }));

  it('skips out-of-range and overlapping edits and keeps the others', () => {
    const m = msgs();
    const plan = planFor('p', [[1, 2], [2, 3], [4, 9]]);
    const r = applyPlan(m, plan);
    expect(r.applied).toEqual(['e2']);
    expect(r.skipped.map((s) => s.editId).sort()).toEqual(['e1', 'e3']);
    expect(m.map((x) => x.content)).toEqual(['m0', 'm1', '[contextd] messages 2..3 compacted (handle h-2)', 'm4', 'm5']);
  });

  it('applies disjoint edits regardless of their order in the plan', () => {
    const m = msgs();
    const r = applyPlan(m, planFor('p', [[0, 1], [3, 5]]));
    expect(r.applied).toEqual(['e1', 'e2']);
    expect(m.map((x) => x.content)).toEqual(['[contextd] messages 0..1 compacted (handle h-1)', 'm2', '[contextd] messages 3..5 compacted (handle h-2)']);
  });
});
