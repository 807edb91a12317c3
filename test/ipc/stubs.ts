/**
 * Handlers defined by the tests: a tiny in-memory "daemon" with one session, enough for every
 * method to have a real answer or a real refusal.
 */
import { defineHandlers } from '../../src/ipc/handlers.js';
import { unknownHandle, unknownSession, planExpired } from '../../src/ipc/errors.js';
import type { Handler } from '../../src/ipc/handlers.js';
import type { WirePlan, HeadroomResult } from '../../src/ipc/results.js';
import type { Section } from '../../src/model/types.js';

export const SESSION = 'sess-1';
export const TRANSCRIPT = '/tmp/agent/transcript.jsonl';

export const HEADROOM: HeadroomResult = { tokens: 90_000, countedTokens: 90_000, total: 128_000, reserveRatio: 0.15, headroom: 1 - 90_000 / 128_000, sections: 2 };

export const SECTIONS: Section[] = [
  {
    id: 's0',
    sessionId: SESSION,
    messageRange: { start: 0, end: 0 },
    messageIds: ['m0'],
    kind: 'system',
    priority: 'critical',
    relevance: 1,
    recency: { turn: 0, ageTurns: 3, weight: 0.5 },
    density: 1,
    tokens: 100,
    anchor: true,
    score: 1,
    factors: { priorityWeight: 1, relevance: 1, recencyWeight: 0.5, density: 1, score: 1 },
  },
  {
    id: 's1',
    sessionId: SESSION,
    messageRange: { start: 1, end: 2 },
    messageIds: ['m1', 'm2'],
    kind: 'tool-call',
    priority: 'low',
    relevance: 0.1,
    recency: { turn: 1, ageTurns: 2, weight: 0.6 },
    density: 0.2,
    tokens: 89_900,
    anchor: false,
    score: 0.01,
    factors: { priorityWeight: 0.25, relevance: 0.1, recencyWeight: 0.6, density: 0.2, score: 0.01 },
    toolName: 'read_file',
  },
];

export function makePlan(planId: string, dryRun = false): WirePlan {
  return {
    planId,
    sessionId: SESSION,
    edits: [
      {
        editId: 'e1',
        replaces: ['s1'],
        messageRange: { start: 1, end: 2 },
        summary: { role: 'user', content: '[contextd: read_file output compacted; recall h-1]' },
        tokensBefore: 89_900,
        tokensAfter: 20,
        reason: 'redundant-tool-output',
        handle: 'h-1',
      },
    ],
    headroomBefore: HEADROOM.headroom,
    headroomAfter: 1 - 120 / 128_000,
    ...(dryRun ? { dryRun: true } : {}),
  };
}

export interface StubState {
  calls: Array<{ method: string; params: unknown; connectionId: string }>;
  subscribers: Map<string, string>; // connectionId → sessionId
  plans: Set<string>;
  nextPlan: number;
}

export function stubHandlers(): { handlers: Record<string, Handler>; state: StubState } {
  const state: StubState = { calls: [], subscribers: new Map(), plans: new Set(), nextPlan: 1 };
  const known = (sessionId: string): void => {
    if (sessionId !== SESSION) throw unknownSession(sessionId);
  };
  const record = (method: string, params: unknown, connectionId: string): void => {
    state.calls.push({ method, params, connectionId });
  };
  const handlers = defineHandlers({
    'session.subscribe': (p, ctx) => {
      record('session.subscribe', p, ctx.connectionId);
      if (p.transcriptPath !== undefined && p.transcriptPath !== TRANSCRIPT) throw unknownSession(p.transcriptPath);
      if (p.sessionId !== undefined) known(p.sessionId);
      state.subscribers.set(ctx.connectionId, SESSION);
      return { sessionId: SESSION, headroom: HEADROOM };
    },
    'session.headroom': (p, ctx) => {
      record('session.headroom', p, ctx.connectionId);
      known(p.sessionId);
      return HEADROOM;
    },
    'session.sections': (p, ctx) => {
      record('session.sections', p, ctx.connectionId);
      known(p.sessionId);
      return SECTIONS;
    },
    'session.compact': async (p, ctx) => {
      record('session.compact', p, ctx.connectionId);
      known(p.sessionId);
      await new Promise<void>((r) => setImmediate(r));
      const planId = `p${state.nextPlan++}`;
      if (!p.dryRun) state.plans.add(planId);
      return makePlan(planId, p.dryRun === true);
    },
    'compaction.ack': (p, ctx) => {
      record('compaction.ack', p, ctx.connectionId);
      if (!state.plans.delete(p.planId)) throw planExpired(p.planId);
      return { ok: true as const };
    },
    'section.recall': (p, ctx) => {
      record('section.recall', p, ctx.connectionId);
      known(p.sessionId);
      if (p.handle !== 'h-1') throw unknownHandle(p.handle);
      return { handle: 'h-1', sessionId: SESSION, messages: [{ id: 'm1', role: 'assistant' as const, text: 'calling read_file' }, { id: 'm2', role: 'tool' as const, text: 'x'.repeat(100) }] };
    },
    'session.end': (p, ctx) => {
      record('session.end', p, ctx.connectionId);
      known(p.sessionId);
      return { harvested: p.outcome === 'success' ? 3 : 0 };
    },
    'warm.bootstrap': (p, ctx) => {
      record('warm.bootstrap', p, ctx.connectionId);
      return { templateIds: ['t1'], messages: [{ role: 'system', content: `tips for ${p.task} within ${p.budgetTokens}` }], tokens: 12 };
    },
    'daemon.status': (p, ctx) => {
      record('daemon.status', p, ctx.connectionId);
      return { server: { name: 'contextd', version: '0.0.0-test' }, uptimeSeconds: 1, sessions: [{ sessionId: SESSION, headroom: HEADROOM.headroom }] };
    },
  });
  return { handlers, state };
}
