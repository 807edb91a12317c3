import { describe, expect, it } from 'vitest';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { generateTranscript } from '../fixtures/transcripts.js';
import { CLI, e2eScope, runCli } from './spawn.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';

const scope = e2eScope();
const temp = (): string => scope.emptyDir('cli');

describe('the CLI', () => {
  it('prints help and exits 0; a usage error exits 2', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const cmd of ['daemon', 'inspect', 'compact', 'status', 'top', 'headroom', 'warm', 'bench', 'demo']) expect(help.stdout).toContain(cmd);
    expect((await runCli(['inspect'])).code).toBe(2);
    expect((await runCli(['inspect', 'x.jsonl', '--budget', 'lots'])).code).toBe(2);
    expect((await runCli(['no-such-command'])).code).toBe(2);
  });

  it('inspect: counts bad lines, exits 0; exits 1 when nothing can be read', async () => {
    const d = temp();
    const f = join(d, 'mixed.jsonl');
    writeFileSync(f, demoTranscriptJsonl({ rounds: 2 }) + 'not json\n\u0000\u0001\u0002garbage\n');
    const r = await runCli(['inspect', f, '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { format: string; skippedLines: number; sections: unknown[]; tokens: number; headroom: number; budget: { total: number } };
    expect(report.format).toBe('openai-chat');
    expect(report.skippedLines).toBe(2);
    expect(report.sections.length).toBeGreaterThan(5);
    expect(report.headroom).toBeCloseTo(1 - report.tokens / report.budget.total, 3);
    const junk = join(d, 'junk.jsonl');
    writeFileSync(junk, 'nope\nstill nope\n');
    const bad = await runCli(['inspect', junk]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/contextd:/);
  });

  it('daemon: a bad config exits 2 naming the field', async () => {
    const d = temp();
    const cfg = join(d, 'c.json');
    writeFileSync(cfg, JSON.stringify({ reserveRatio: 7 }));
    const r = await runCli(['daemon', '--config', cfg, '--socket', join(d, 's.sock'), '--state', join(d, 'st')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('reserveRatio');
  });

  it('daemon: SIGHUP reloads the config; a closed stdout pipe does not kill it', async () => {
    const d = temp();
    const watch = join(d, 'w');
    mkdirSync(watch);
    const cfg = join(d, 'c.json');
    writeFileSync(cfg, JSON.stringify({ reserveRatio: 0.15 }));
    const daemon = await scope.daemon(['--config', cfg, '--watch', watch, '--socket', join(d, 's.sock'), '--state', join(d, 'st')]);
    daemon.proc.stdout?.destroy();
    writeFileSync(cfg, JSON.stringify({ reserveRatio: 0.25 }));
    daemon.proc.kill('SIGHUP');
    const reloaded = await daemon.waitForLog((l) => l.msg === 'configuration reloaded');
    expect(reloaded['reserveRatio']).toBe(0.25);
    // A bad reload keeps the old configuration and the daemon running.
    writeFileSync(cfg, '{broken');
    daemon.proc.kill('SIGHUP');
    await daemon.waitForLog((l) => l.msg.startsWith('reload failed'));
    writeFileSync(join(watch, 's.jsonl'), demoTranscriptJsonl({ rounds: 1 }));
    await daemon.waitForLog((l) => l.msg === 'headroom' && l['reserveRatio'] === 0.25);
    daemon.proc.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  });

  it('status and top --once talk to the running daemon', async () => {
    const d = temp();
    const watch = join(d, 'w');
    mkdirSync(watch);
    const sock = join(d, 's.sock');
    const daemon = await scope.daemon(['--watch', watch, '--socket', sock, '--state', join(d, 'st'), '--budget', '50000']);
    const f = join(watch, 'live.jsonl');
    writeFileSync(f, '');
    appendFileSync(f, demoTranscriptJsonl({ rounds: 3 }));
    await daemon.waitForLog((l) => l.msg === 'headroom' && l['sessionId'] === 'live');
    const status = await runCli(['status', '--socket', sock, '--json']);
    expect(status.code).toBe(0);
    const json = JSON.parse(status.stdout) as { sessions: { sessionId: string; total: number }[] };
    expect(json.sessions.map((s) => s.sessionId)).toEqual(['live']);
    expect(json.sessions[0]?.total).toBe(50000);
    const top = await runCli(['top', '--socket', sock, '--once']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('live');
    const down = await runCli(['status', '--socket', join(d, 'nobody.sock')]);
    expect(down.code).toBe(1);
  });

  it('compact: reaches the budget on a real transcript, or names the anchors in the way', async () => {
    const f = join(temp(), 'hermes.jsonl');
    writeFileSync(f, generateTranscript('openai-chat', { seed: 12, turns: 6 }).jsonl);
    const inspect = JSON.parse((await runCli(['inspect', f, '--json'])).stdout) as { tokens: number };
    const budget = Math.round(inspect.tokens * 0.8);
    const d = temp();
    const out = join(d, 'out.jsonl');
    const r = await runCli(['compact', f, '--budget', String(budget), '--json', '--out', out, '--state', join(d, 'state')]);
    expect(r.code).toBe(0);
    const res = JSON.parse(r.stdout) as { tokensAfter: number; budget: number; edits: unknown[] };
    expect(res.tokensAfter).toBeLessThanOrEqual(budget * 0.85);
    expect(res.edits.length).toBeGreaterThan(0);
    const tiny = await runCli(['compact', f, '--budget', '200', '--json', '--state', join(d, 'state')]);
    expect(tiny.code).toBe(1);
  });

  it('demo runs end to end on the embedded defaults', async () => {
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(process.execPath, [CLI, 'demo', '--rounds', '8', '--delay-ms', '5', '--budget', '16000'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (b: Buffer) => (out += b.toString()));
      p.on('exit', (code) => resolve({ code, out }));
    });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/plan p_/);
    expect(r.out).toMatch(/nothing is lost: recall h_\w+ returns [1-9]\d* original message/);
  });

  it('demo and daemon fail fast and clean up: a missing file, a socket already served', async () => {
    const missing = await runCli(['demo', '--file', '/nonexistent/contextd/x.jsonl'], {}, 30_000);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/ENOENT|no such file/);
    const d = temp();
    const sock = join(d, 's.sock');
    const first = await scope.daemon(['--watch', d, '--socket', sock, '--state', join(d, 'st1')]);
    const second = await runCli(['daemon', '--watch', d, '--socket', sock, '--state', join(d, 'st2')], {}, 30_000);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(sock);
    first.proc.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
  });
});
