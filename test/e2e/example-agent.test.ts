import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAgent } from '../../examples/agent.js';
import { e2eScope } from './spawn.js';

const scope = e2eScope();

describe('examples/agent.ts against the real daemon', () => {
  it('receives a plan, applies it to its own message list, acks it, and ends the session', async () => {
    const { watch, socket, state } = scope.tempDir('example');
    const daemon = await scope.daemon(['--watch', watch, '--socket', socket, '--state', state, '--budget', '12000']);
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
