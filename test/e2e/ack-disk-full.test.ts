/**
 * `compaction.ack {applied: true}` while the state disk is full: the model and the answer agree.
 * (It answered -32006, "retry later", with the plan already applied to the model, and a retry
 * was told the plan had expired: found by an audit.) Root only: a real tmpfs is mounted as the
 * state folder and filled.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { WirePlan } from '../../src/ipc/client.js';
import { e2eScope, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();
const isRoot = process.getuid?.() === 0;

function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch {
    // ENOSPC: full
  } finally {
    closeSync(fd);
  }
}

const toolRound = (i: number): string =>
  [
    JSON.stringify({ role: 'assistant', content: '', tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/a${i % 5}.ts` }) } }] }),
    JSON.stringify({ role: 'tool', tool_call_id: `call_${i}`, content: Array.from({ length: 80 }, (_, j) => `line ${j} ${Math.random()}`).join('\n') }),
  ].join('\n') + '\n';

describe.skipIf(!isRoot)('an ack while the state disk is full', () => {
  it('an ack answered with an error leaves the model as it was (or the ack succeeds)', async () => {
    const t = scope.tempDir('ackfull');
    const mnt = join(t.dir, 'full');
    mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
    scope.defer(() => void execFileSync('umount', ['-l', mnt]));
    const state = join(mnt, 'state');
    const d = await scope.daemon(['--watch', t.watch, '--socket', t.socket, '--state', state, '--budget', '4000']);
    scope.defer(async () => {
      if (d.proc.exitCode === null && d.proc.signalCode === null) {
        d.proc.kill('SIGKILL');
        await d.exited;
      }
    });
    const file = join(t.watch, 'f.jsonl');
    appendFileSync(file, `${JSON.stringify({ role: 'system', content: 'sys' })}\n${JSON.stringify({ role: 'user', content: 'fix the bug in src/a.ts' })}\n`);
    const c = await scope.client(t.socket);
    const sessionId = await subscribeWhenSeen(c, file);
    let plan: WirePlan | undefined;
    c.on('compaction.proposed', (p: WirePlan) => (plan ??= p));
    for (let i = 0; plan === undefined && i < 200; i++) {
      appendFileSync(file, toolRound(i));
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(plan).toBeDefined();
    const compactedBefore = (await c.sections(sessionId)).filter((s) => s.compacted === true).length;
    // Fill the disk, then let the store's own writes use up what the WAL had left.
    fill(join(mnt, 'filler'));
    for (let i = 0; i < 30; i++) {
      appendFileSync(file, `${JSON.stringify({ role: 'user', content: `more text ${Math.random()}`.repeat(30) })}\n`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 1_500));
    const ack = await c.ack({ planId: (plan as WirePlan).planId, applied: true }).then(
      () => 'ok' as const,
      (err: unknown) => err as { code?: number; message?: string },
    );
    const compactedAfter = (await c.sections(sessionId)).filter((s) => s.compacted === true).length;
    // Either the ack stood (and the model follows it) or it failed (and the model did not move).
    if (ack === 'ok') expect(compactedAfter).toBeGreaterThan(compactedBefore);
    else expect({ ack: ack.message, compactedAfter }).toEqual({ ack: ack.message, compactedAfter: compactedBefore });
  }, 60_000);
});
