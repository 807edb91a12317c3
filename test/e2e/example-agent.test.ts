import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgent } from '../../examples/agent.js';
import { spawnDaemon, type SpawnedDaemon } from './spawn.js';

let daemon: SpawnedDaemon | undefined;
let dir: string | undefined;
afterEach(async () => {
  if (daemon && daemon.proc.exitCode === null) {
    daemon.proc.kill('SIGKILL');
    await daemon.exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('examples/agent.ts against the real daemon', () => {
  it('receives a plan, applies it to its own message list, acks it, and ends the session', async () => {
    dir = mkdtempSync(join(tmpdir(), 'contextd-example-'));
    const watch = join(dir, 'sessions');
    mkdirSync(watch);
    const socket = join(dir, 'contextd.sock');
    daemon = await spawnDaemon(['--watch', watch, '--socket', socket, '--state', join(dir, 'state'), '--budget', '12000']);
    const lines: string[] = [];
    const transcriptPath = join(watch, 'example.jsonl');
    const outcome = await runAgent({ socketPath: socket, transcriptPath, turns: 12, log: (l) => lines.push(l) });
    expect(outcome.plans.length).toBeGreaterThan(0);
    expect(outcome.plans.some((p) => p.applied.length > 0)).toBe(true);
    expect(outcome.tokensAfter).toBeLessThan(outcome.tokensBefore);
    // The agent's context now quotes recall handles in place of what was compacted.
    expect(outcome.messages.some((m) => /\[contextd recall h_[0-9a-f]+\]/.test(m.content))).toBe(true);
    // Its transcript on disk is untouched: the originals stay where the agent wrote them.
    expect(readFileSync(transcriptPath, 'utf8').split('\n').filter(Boolean).length).toBeGreaterThan(outcome.messages.length);
    await daemon.waitForLog((l) => l.msg === 'plan applied by the agent');
  });
});
