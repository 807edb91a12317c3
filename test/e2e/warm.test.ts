import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoTranscript } from '../../src/demo/transcript.js';
import { WARM_SNAPSHOT_FILE } from '../../src/warm/snapshot-format.js';
import { CONTEXTD_BIN } from '../agents/harness.js';
import { e2eScope, runCli, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();

// Planted, syntactically valid-looking credentials (not real).
const AWS = 'AKIAIOSFODNN7EXAMPLQ';
const GH = 'ghp_' + 'x1Y2z3A4b5C6d7E8f9G0h1I2j3K4l5M6n7O8';

describe('finished session → harvest → warm.bootstrap, through the real daemon', () => {
  it('harvests on session.end, serves a bootstrap within budget, and stores no secret', async () => {
    const { watch, socket, state } = scope.tempDir('warm-e2e');
    const daemon = await scope.daemon(['--watch', watch, '--socket', socket, '--state', state, '--budget', '200000']);
    const lines = demoTranscript({ rounds: 6 });
    const file = join(watch, 'billing-fix.jsonl');
    const withSecret = lines.map((l, i) => (i === 2 ? { ...l, content: `${l.content}\nexport AWS_ACCESS_KEY_ID=${AWS}\ngit remote set-url origin https://${GH}@github.com/acme/billing.git` } : l));
    writeFileSync(file, withSecret.map((l) => JSON.stringify(l)).join('\n') + '\n');

    const c = await scope.client(socket);
    try {
      const sessionId = await subscribeWhenSeen(c, file, 5_000);
      expect(sessionId).toBe('billing-fix');
      const ended = await c.endSession(sessionId, 'success');
      expect(ended.harvested).toBe(1);

      const boot = (await c.bootstrap({ task: 'fix the rounding bug in billing totals computeTotal', budgetTokens: 2000 })) as { templateIds: string[]; messages: { content: string }[]; tokens: number };
      expect(boot.templateIds.length).toBeGreaterThan(0);
      expect(boot.tokens).toBeGreaterThan(0);
      expect(boot.tokens).toBeLessThanOrEqual(2000);
      expect(boot.messages.map((m) => m.content).join('\n')).toMatch(/total\.ts|computeTotal|billing/);
    } finally {
      await c.close();
    }
    daemon.proc.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);

    const list = await runCli(['warm', 'list', '--state', state, '--json']);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('billing');
    // Neither the database (and its WAL) nor the daemon's logs hold the planted secrets.
    for (const f of ['contextd.db', 'contextd.db-wal']) {
      const p = join(state, f);
      if (!existsSync(p)) continue;
      const bytes = readFileSync(p).toString('latin1');
      expect(bytes).not.toContain(AWS);
      expect(bytes).not.toContain(GH);
    }
    const logs = JSON.stringify(daemon.logs);
    expect(logs).not.toContain(AWS);
    expect(logs).not.toContain(GH);

    // The harvest also refreshed the warm snapshot: owner-only, as redacted as the store...
    const snapshot = join(state, WARM_SNAPSHOT_FILE);
    expect(statSync(snapshot).mode & 0o777).toBe(0o600);
    const snapshotText = readFileSync(snapshot, 'utf8');
    expect(snapshotText).toContain('billing');
    expect(snapshotText).not.toContain(AWS);
    expect(snapshotText).not.toContain(GH);
    // ...and with the daemon gone, the hook bootstraps a first prompt from it.
    const hook = spawnSync(process.execPath, [CONTEXTD_BIN, 'hook', 'claude-code', '--state', state, '--socket', socket], {
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'next', prompt: 'fix the rounding bug in billing totals computeTotal' }),
      encoding: 'utf8',
    });
    expect(hook.status).toBe(0);
    expect(hook.stdout).toMatch(/contextd warm start[^]*(total\.ts|computeTotal|billing)/);
    expect(readFileSync(join(state, 'hooks.log'), 'utf8')).toContain('warm bootstrap read from the warm snapshot');
  });

  it('harvests a session by itself once it has been idle for idleTimeoutMs', async () => {
    const { dir, watch } = scope.tempDir('idle-e2e');
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ idleTimeoutMs: 1500 }));
    const state = join(dir, 'state');
    const daemon = await scope.daemon(['--config', config, '--watch', watch, '--socket', join(dir, 's.sock'), '--state', state, '--budget', '200000']);
    writeFileSync(join(watch, 'quiet.jsonl'), demoTranscript({ rounds: 4 }).map((l) => JSON.stringify(l)).join('\n') + '\n');
    const harvested = await daemon.waitForLog((l) => l.msg === 'idle session harvested' && l['sessionId'] === 'quiet', 20_000);
    expect(harvested['harvested']).toBe(1);
    // Its model is freed; when the agent resumes, the whole transcript is read again.
    await daemon.waitForLog((l) => l.msg === 'session closed' && l['sessionId'] === 'quiet');
    appendFileSync(join(watch, 'quiet.jsonl'), JSON.stringify({ role: 'user', content: 'one more thing: add a changelog entry' }) + '\n');
    const reopened = await daemon.waitForLog((l) => l.msg === 'headroom' && l['sessionId'] === 'quiet' && l['reason'] === 'start' && Number(l['sections']) > 10, 20_000);
    expect(Number(reopened['tokens'])).toBeGreaterThan(5_000);
    daemon.proc.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
    const list = JSON.parse((await runCli(['warm', 'list', '--state', state, '--json'])).stdout) as { templates: unknown[] };
    expect(list.templates.length).toBe(1);
  });
});
