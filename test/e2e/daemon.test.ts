import { describe, expect, it } from 'vitest';
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ContextdClient, type WirePlan } from '../../src/ipc/client.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import { generateTranscript } from '../fixtures/transcripts.js';
import { e2eScope, runCli, type DaemonDir, type SpawnedDaemon, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();
const tempDir = (): DaemonDir => scope.tempDir('e2e');
const startDaemon = (args: string[]): Promise<SpawnedDaemon> => scope.daemon(args);
const client = (socket: string): Promise<ContextdClient> => scope.client(socket);

function nextPlan(c: ContextdClient, sessionId: string, timeoutMs = 20_000): Promise<WirePlan> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no compaction.proposed for ${sessionId} in ${timeoutMs} ms`)), timeoutMs);
    const on = (p: WirePlan) => {
      if (p.sessionId !== sessionId) return;
      clearTimeout(timer);
      c.off('compaction.proposed', on);
      resolve(p);
    };
    c.on('compaction.proposed', on);
  });
}

const lines = (rounds: number, variant = 'a') => demoTranscript({ rounds, variant }).map((l) => JSON.stringify(l));

describe('the daemon, spawned for real', () => {
  it('pushes a plan before the reserve is crossed, follows the ack, recalls originals, leaves other sessions alone', async () => {
    const t = tempDir();
    const budget = 24_000;
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state, '--budget', String(budget)]);
    expect(statSync(t.socket).mode & 0o777).toBe(0o600);

    const fileA = join(t.watch, 'agent-a.jsonl');
    const fileB = join(t.watch, 'agent-b.jsonl');
    const a = lines(14, 'a');
    writeFileSync(fileA, `${a[0]}\n`);
    writeFileSync(fileB, `${lines(1, 'b').slice(0, 3).join('\n')}\n`);
    const agent = await client(t.socket);
    const sessionA = await subscribeWhenSeen(agent, fileA);
    const other = await client(t.socket);
    const sessionB = await subscribeWhenSeen(other, fileB);
    const before = await other.headroom(sessionB);
    let otherPlans = 0;
    other.on('compaction.proposed', () => otherPlans++);

    // Append line by line until the daemon proposes a plan.
    const planPromise = nextPlan(agent, sessionA, 60_000);
    let settled = false;
    void planPromise.then(() => (settled = true), () => (settled = true));
    let i = 1;
    while (!settled && i < a.length) {
      appendFileSync(fileA, `${a[i++]}\n`);
      await new Promise((r) => setTimeout(r, 40)); // slow enough that a loaded machine still sees the soft watermark first
    }
    const plan = await planPromise;
    expect(plan.edits.length).toBeGreaterThan(0);
    expect(plan.headroomBefore).toBeGreaterThanOrEqual(0.15);
    for (const e of plan.edits) expect(e.summary.content).toContain(`[contextd recall ${e.handle}]`);

    // Let the daemon catch up with every line written so far, then apply the plan.
    const size = statSync(fileA).size;
    let beforeAck = await agent.headroom(sessionA);
    for (let k = 0; k < 100; k++) {
      await new Promise((r) => setTimeout(r, 100));
      const h = await agent.headroom(sessionA);
      if (h.tokens === beforeAck.tokens && statSync(fileA).size === size) break;
      beforeAck = h;
    }
    const saved = plan.edits.reduce((n, e) => n + e.tokensBefore - e.tokensAfter, 0);
    const ack = (await agent.ack({ planId: plan.planId, applied: true })) as { ok: true; headroom: number };
    expect(ack.ok).toBe(true);
    const after = await agent.headroom(sessionA);
    expect(after.headroom).toBeGreaterThanOrEqual(0.15);
    expect(after.tokens).toBe(beforeAck.tokens - saved);

    // Nothing is lost: the originals come back by handle.
    const edit = plan.edits[0];
    const recalled = await agent.recall(sessionA, edit?.handle as string);
    expect(recalled.messages.length).toBeGreaterThan(0);
    expect(recalled.messages.map((m) => m.text).join('\n').length).toBeGreaterThan(edit?.summary.content.length ?? 0);

    // A stale ack is refused with a code the agent can act on.
    await expect(agent.ack({ planId: plan.planId, applied: true })).rejects.toMatchObject({ code: -32002 });

    // The other session saw nothing of this.
    expect(otherPlans).toBe(0);
    expect((await other.headroom(sessionB)).tokens).toBe(before.tokens);

    // The decision is in the logs with its numbers.
    const planned = d.logs.find((l) => l.msg === 'compaction planned' && l['sessionId'] === sessionA);
    expect(planned).toMatchObject({ sessionId: sessionA, planId: plan.planId });
    expect(Array.isArray(planned?.['edits'])).toBe(true);
    const headroomLine = d.logs.find((l) => l.msg === 'headroom' && l['sessionId'] === sessionA);
    expect(headroomLine).toMatchObject({ sessionId: sessionA, total: budget, file: fileA });
    expect(typeof headroomLine?.['tokens']).toBe('number');

    // SIGTERM drains and exits 0, removing the socket.
    d.proc.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(existsSync(t.socket)).toBe(false);
    expect(d.logs.some((l) => l.msg === 'contextd stopped')).toBe(true);

    // The headroom log is readable offline.
    const log = await runCli(['headroom', sessionA, '--state', t.state, '--json']);
    expect(log.code).toBe(0);
    const samples = (JSON.parse(log.stdout) as { samples: { headroom: number }[] }).samples;
    expect(samples.length).toBeGreaterThan(1);
  });

  it('survives junk, oversized and half-sent lines on the socket', async () => {
    const t = tempDir();
    writeFileSync(join(t.dir, 'config.json'), JSON.stringify({ maxMessageBytes: 64 * 1024 }));
    await startDaemon(['--config', join(t.dir, 'config.json'), '--watch', t.watch, '--socket', t.socket, '--state', t.state]);
    const raw = (payload: string): Promise<string[]> =>
      new Promise((resolve, reject) => {
        const s = connect(t.socket);
        let buf = '';
        s.on('data', (d) => (buf += d.toString()));
        s.on('error', reject);
        s.write(payload, () => setTimeout(() => s.end(), 300));
        s.on('close', () => resolve(buf.split('\n').filter(Boolean)));
      });
    const replies = await raw(`not json\n${'x'.repeat(100 * 1024)}\n{"jsonrpc":"2.0","id":7,"method":"daemon.status","params":{}}\n`);
    const parsed = replies.map((r) => JSON.parse(r) as { id: unknown; error?: { code: number }; result?: unknown });
    expect(parsed[0]?.error?.code).toBe(-32700);
    expect(parsed[1]?.error?.code).toBe(-32004);
    expect(parsed[2]).toMatchObject({ id: 7 });
    expect(parsed[2]?.result).toBeDefined();
    // Half a message, then gone.
    await new Promise<void>((resolve) => {
      const s = connect(t.socket, () => {
        s.write('{"jsonrpc":"2.0","id":1,"meth');
        s.destroy();
        resolve();
      });
    });
    const c = await client(t.socket);
    expect((await c.status()).server).toMatchObject({ name: 'contextd' });
  });

  it('after kill -9 and a restart, the archive and headroom log are intact and the model is rebuilt', async () => {
    const t = tempDir();
    const args = ['--watch', t.watch, '--socket', t.socket, '--state', t.state, '--budget', '20000'];
    const d1 = await startDaemon(args);
    const file = join(t.watch, 'killed.jsonl');
    writeFileSync(file, lines(12).join('\n') + '\n');
    const c1 = await client(t.socket);
    const sessionId = await subscribeWhenSeen(c1, file);
    const plan = (await c1.compact(sessionId, {})) as WirePlan;
    expect(plan.edits.length).toBeGreaterThan(0);
    const h1 = await c1.headroom(sessionId);
    // A finished sibling session leaves a warm template behind.
    const done = join(t.watch, 'finished.jsonl');
    writeFileSync(done, lines(4, 'f').join('\n') + '\n');
    const finished = await subscribeWhenSeen(c1, done);
    expect((await c1.endSession(finished, 'success')).harvested).toBe(1);
    const templatesBefore = (JSON.parse((await runCli(['warm', 'list', '--state', t.state, '--json'])).stdout) as { templates: unknown[] }).templates;
    expect(templatesBefore.length).toBe(1);
    d1.proc.kill('SIGKILL');
    await d1.exited;
    await c1.close();

    // The stale socket file is replaced on restart.
    const d2 = await startDaemon(args);
    const c2 = await client(t.socket);
    await subscribeWhenSeen(c2, file);
    const h2 = await c2.headroom(sessionId);
    expect(h2.tokens).toBe(h1.tokens);
    expect(h2.sections).toBe(h1.sections);
    const recalled = await c2.recall(sessionId, plan.edits[0]?.handle as string);
    expect(recalled.messages.length).toBeGreaterThan(0);
    d2.proc.kill('SIGTERM');
    expect((await d2.exited).code).toBe(0);
    const log = await runCli(['headroom', sessionId, '--state', t.state, '--json']);
    expect((JSON.parse(log.stdout) as { samples: unknown[] }).samples.length).toBeGreaterThan(0);
    expect((JSON.parse((await runCli(['warm', 'list', '--state', t.state, '--json'])).stdout) as { templates: unknown[] }).templates).toEqual(templatesBefore);
  });

  it('follows a hermes transcript appended line by line', async () => {
    const t = tempDir();
    const src = join(t.dir, 'source.jsonl');
    writeFileSync(src, generateTranscript('openai-chat', { seed: 11, turns: 5, compactAfterTurn: 3 }).jsonl);
    const corpusLines = readFileSync(src, 'utf8').split('\n').filter(Boolean);
    await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state]);
    const file = join(t.watch, 'hermes.jsonl');
    writeFileSync(file, `${corpusLines[0]}\n`);
    const c = await client(t.socket);
    const sessionId = await subscribeWhenSeen(c, file);
    for (const l of corpusLines.slice(1)) appendFileSync(file, `${l}\n`);
    const offline = await runCli(['inspect', src, '--json']);
    const expected = JSON.parse(offline.stdout) as { tokens: number; sections: unknown[] };
    const until = Date.now() + 20_000;
    let h = await c.headroom(sessionId);
    while (h.tokens !== expected.tokens && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      h = await c.headroom(sessionId);
    }
    expect(h.tokens).toBe(expected.tokens);
    expect(h.sections).toBe(expected.sections.length);
  });
});
