import { describe, expect, it } from 'vitest';
import { appendFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generateTranscript } from '../fixtures/transcripts.js';
import { e2eScope, runCli } from './spawn.js';
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
    const levels = await runCli(['bench', 'latency', '--levels', '10,0']);
    expect(levels.code).toBe(2);
    expect(levels.stderr).toContain('--levels');
    const both = await runCli(['bench', 'latency', '--levels', '1', '--rss-only']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--rss-only');
  });

  it('bench latency --levels runs only those session counts, without the rss and limits parts', async () => {
    const r = await runCli(['bench', 'latency', '--levels', '1', '--json'], {}, 120_000);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { scenario: string; latency: { sessions: number; appendToPlanMs: { n: number }; warmUpAppendToPlanMs: { n: number } }[]; rss?: unknown; limits?: unknown };
    expect(out.scenario).toBe('latency');
    expect(out.latency.map((l) => l.sessions)).toEqual([1]);
    expect(out.latency[0]?.appendToPlanMs.n).toBeGreaterThan(0);
    // the untimed JIT warm-up: 10 other sessions × 10 appends, each answered by a plan
    expect(out.latency[0]?.warmUpAppendToPlanMs.n).toBe(100);
    expect(out.latency[0]).toMatchObject({ timeouts: 0, warmUpTimeouts: 0 });
    expect(out.rss).toBeUndefined();
    expect(out.limits).toBeUndefined();
  }, 150_000);

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

  it('demo runs end to end on the embedded defaults: a legend, one real summary, a recall before its state is deleted', async () => {
    const r = await runCli(['demo', '--rounds', '8', '--delay-ms', '5', '--budget', '16000'], {}, 120_000);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('legend:');
    expect(r.stdout).toMatch(/plan p_/);
    const shown = /one summary the planner wrote \(reason [\w-]+, handle (h_\w+)\), as the agent now sees it:\n((?: {4}.*\n)+)/.exec(r.stdout);
    expect(shown, r.stdout).not.toBeNull();
    const [, handle, summary] = shown as unknown as [string, string, string];
    // The printed summary is the planner's text: it quotes its own handle.
    expect(summary).toContain(handle);
    expect(r.stdout).toMatch(new RegExp(`nothing is lost: recall ${handle} returns [1-9]\\d* original message\\(s\\); the first lines:\n {4}--- \\w+`));
    const state = /state (\S+contextd-demo-\w+\/state)/.exec(r.stdout)?.[1];
    expect(state).toBeDefined();
    expect(existsSync(state as string)).toBe(false);
    expect(r.stdout).toContain('run with --keep');
  });

  it('demo --keep keeps its state and prints a recall command that works', async () => {
    const r = await runCli(['demo', '--rounds', '8', '--delay-ms', '5', '--budget', '16000', '--keep'], {}, 120_000);
    const kept = /kept the demo's state in (\S+)/.exec(r.stdout)?.[1];
    if (kept) scope.defer(() => rmSync(dirname(kept), { recursive: true, force: true }));
    expect(r.code).toBe(0);
    const cmd = /recall them all later with: contextd (recall --state (\S+) (h_\w+))\n/.exec(r.stdout);
    expect(cmd, r.stdout).not.toBeNull();
    const [, , stateDir, handle] = cmd as unknown as [string, string, string, string];
    expect(stateDir).toBe(kept);
    const recall = await runCli(['recall', '--state', stateDir, handle]);
    expect(recall.code).toBe(0);
    expect(recall.stdout.split('\n')[0]).toMatch(new RegExp(`^${handle}  session demo-billing-fix`));
    expect(recall.stdout).toMatch(/^--- (assistant|tool|user)/m);
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
