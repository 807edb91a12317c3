import { describe, expect, it } from 'vitest';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RpcError, type ContextdClient, type WirePlan } from '../../src/ipc/client.js';
import { demoTranscript, demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { e2eScope, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();

/** Plans pushed for `sessionId`, in order. */
function collect(c: ContextdClient, sessionId: string): WirePlan[] {
  const got: WirePlan[] = [];
  c.on('compaction.proposed', (p: WirePlan) => {
    if (p.sessionId === sessionId) got.push(p);
  });
  return got;
}

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** One tool call and its large, repetitive result, as one append (what `bench latency` writes). */
function toolPair(k: number): string {
  const extra = demoTranscript({ rounds: 3, variant: 'z' }).filter((l) => l.role === 'tool' || l.tool_calls);
  const at = (k % Math.floor(extra.length / 2)) * 2;
  return extra
    .slice(at, at + 2)
    .map((l) => JSON.stringify({ ...l, tool_call_id: l.tool_call_id ? `${l.tool_call_id}_${k}` : undefined, tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_${k}` })) }))
    .join('\n') + '\n';
}

/**
 * The spawned daemon on a transcript of ~20k tokens in a 32k window (in the reserve zone, every
 * append answered by a plan), and a client subscribed to it collecting the plans pushed.
 */
async function subscribed(name: string): Promise<{ file: string; agent: ContextdClient; sessionId: string; plans: WirePlan[] }> {
  const t = scope.tempDir(name);
  const file = join(t.watch, 'agent.jsonl');
  writeFileSync(file, demoTranscriptJsonl({ rounds: 11, variant: 'a' }));
  const config = join(t.dir, 'config.json');
  writeFileSync(config, JSON.stringify({ minPlanIntervalMs: 0 }));
  await scope.daemon(['--config', config, '--watch', t.watch, '--socket', t.socket, '--state', t.state, '--budget', '32000']);
  const agent = await scope.client(t.socket);
  const sessionId = await subscribeWhenSeen(agent, file);
  return { file, agent, sessionId, plans: collect(agent, sessionId) };
}

describe('edits the agent declined, with the spawned daemon and a socket client that rejects', () => {
  it('are not proposed again by automatic plans (nor archived again), but a manual plan may propose them', async () => {
    const { file, agent, sessionId, plans } = await subscribed('declined');

    // Reject every plan pushed until none comes for a while (a plan made before the subscription
    // may be superseded by one made for it: that one needs no answer).
    const declined = new Set<string>();
    const handles = new Set<string>();
    const rejectAll = async (): Promise<void> => {
      for (let seen = 0; ; ) {
        await until('a plan', () => plans.length > seen);
        seen = plans.length;
        const p = plans[seen - 1] as WirePlan;
        await new Promise((r) => setTimeout(r, 300));
        if (plans.length > seen) continue;
        try {
          await agent.ack({ planId: p.planId, applied: false, reason: 'test: declined' });
        } catch (err) {
          if (!(err instanceof RpcError && err.code === -32002)) throw err;
          continue;
        }
        for (const e of p.edits) {
          for (const id of e.replaces) declined.add(id);
          if (e.handle !== undefined) handles.add(e.handle);
        }
        return;
      }
    };
    await rejectAll();
    expect(declined.size).toBeGreaterThan(0);

    // Each append makes a plan of what grew since, never of a declined section.
    for (let k = 0; k < 3; k++) {
      const seen = plans.length;
      appendFileSync(file, toolPair(k));
      await until(`the plan after append ${k}`, () => plans.length > seen);
      const p = plans[plans.length - 1] as WirePlan;
      expect(p.edits.length).toBeGreaterThan(0);
      for (const e of p.edits) {
        expect(e.replaces.filter((id) => declined.has(id))).toEqual([]);
        expect(e.handle).toBeDefined();
        expect(handles.has(e.handle as string)).toBe(false);
      }
      await rejectAll();
    }

    // A plan asked for (session.compact) is not bound by what was declined.
    const manual = await agent.compact(sessionId, { dryRun: true });
    expect(manual.edits.some((e) => e.replaces.some((id) => declined.has(id)))).toBe(true);
  });
  it('a hold made in the reserve does not starve a session filling its window: once headroom reaches 0 the declined sections are proposed again', async () => {
    const { file, agent, plans } = await subscribed('declined-full');

    // Append until a plan is pushed in the reserve zone, then decline it (the answer settles the hold).
    let k = 0;
    let declinedPlan: WirePlan | undefined;
    while (!declinedPlan) {
      const seen = plans.length;
      appendFileSync(file, toolPair(k++));
      await until(`a plan after append ${k}`, () => plans.length > seen);
      await new Promise((r) => setTimeout(r, 300));
      const p = plans[plans.length - 1] as WirePlan;
      if (p.headroomBefore >= 0.15 || p.edits.length === 0) continue;
      try {
        await agent.ack({ planId: p.planId, applied: false, reason: 'test: declined in the reserve' });
        declinedPlan = p;
      } catch (err) {
        if (!(err instanceof RpcError && err.code === -32002)) throw err;
      }
    }
    const declined = new Set(declinedPlan.edits.flatMap((e) => e.replaces));
    expect(declinedPlan.headroomBefore).toBeGreaterThan(0);

    // The agent keeps working (plans of what grew are left unanswered) until its window is full.
    const after = plans.length;
    const asksAgain = (): WirePlan | undefined => plans.slice(after).find((p) => p.headroomBefore <= 0 && p.edits.some((e) => e.replaces.some((id) => declined.has(id))));
    for (let n = 0; n < 40 && !asksAgain(); n++) {
      const seen = plans.length;
      appendFileSync(file, toolPair(k++));
      await until(`a plan after append ${k}`, () => plans.length > seen);
    }
    const again = asksAgain();
    expect(again, 'no plan at headroom 0 proposed the sections declined in the reserve').toBeDefined();
    // It makes room again (the target is the reserve's, not the size kept at the decline).
    expect((again as WirePlan).headroomAfter).toBeGreaterThan(0);
  });
});
