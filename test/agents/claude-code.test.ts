/**
 * The real Claude Code binary (2.1.330, a pinned devDependency) against the scripted model
 * server, with the real daemon watching its HOME. These tests are the format-drift alarm for
 * Claude Code's transcripts and the proof that hooks and fork reach the model's requests.
 */
import { describe, expect, it } from 'vitest';
import { e2eScope, type SpawnedDaemon } from '../e2e/spawn.js';
import { lines, makeSandbox, parsedTools, runClaude, runContextd, expectUsageTracked, transcripts, type Sandbox } from './harness.js';
import { codingTask, startModelServer, textOf, type ModelServer } from './model-server/index.js';

const TIMEOUT = 240_000;
const CLAUDE_ARGS = ['--allowedTools', 'Bash,Read,Edit', '--output-format', 'json'];
/** Line types Claude Code 2.1.330 writes that carry no conversation message (counted, not parsed). */
const NON_MESSAGE_TYPES = new Set([
  'api-request',
  'api-request-blob',
  'api-request-shape',
  'atis-latch',
  'attachment',
  'cost-state',
  'file-history-snapshot',
  'last-prompt',
  'permission-mode',
  'progress',
  'queue-operation',
  'tools-used',
  'custom-title',
  'summary',
]);

const scope = e2eScope();

async function setup(buildLines = 100, builds = 2): Promise<{ sb: Sandbox; server: ModelServer }> {
  const sb = makeSandbox(buildLines);
  const server = await startModelServer({ script: codingTask({ builds }), workspace: sb.workspace, lifetimeMs: TIMEOUT });
  scope.defer(() => sb.cleanup());
  scope.defer(() => server.close());
  return { sb, server };
}

function daemonFor(sb: Sandbox): Promise<SpawnedDaemon> {
  return scope.daemon(['--watch', `${sb.home}/.claude/projects`, '--state', sb.state, '--socket', sb.socket]);
}

function mainTexts(server: ModelServer): string[] {
  return server.requestsOf('main').map((r) => textOf(r.body));
}

describe('Claude Code 2.1.330 against the scripted model server', () => {
  it(
    'runs the coding task; the daemon parses every message line, pairs every tool call and tracks the agent’s usage',
    async () => {
      const { sb, server } = await setup();
      const daemon = await daemonFor(sb);
      const r = await runClaude(sb, server, ['-p', 'fix the calculator so the tests pass', ...CLAUDE_ARGS]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ is_error: false, result: 'Fixed: src/calc.txt now adds; the tests pass.' });
      expect(server.requestsOf('invalid')).toEqual([]);

      const [file] = transcripts(`${sb.home}/.claude/projects`);
      expect(file).toBeDefined();
      const raw = lines(file!);
      // Every tool_use the agent wrote is answered by a tool_result, in the file and in the model.
      const uses = raw.flatMap((l) => ((l['message'] as { content?: unknown } | undefined)?.content instanceof Array ? ((l['message'] as { content: { type: string; id?: string; tool_use_id?: string }[] }).content) : []));
      const useIds = uses.filter((b) => b.type === 'tool_use').map((b) => b.id);
      const resultIds = uses.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
      expect(useIds.length).toBe(6);
      expect(new Set(resultIds)).toEqual(new Set(useIds));

      const parsed = await parsedTools(file!);
      expect(parsed.callIds).toEqual(useIds);
      expect(parsed.resultIds).toEqual(resultIds);
      // Drift alarm: a line type this version writes that is neither parsed nor known to carry no message.
      const unknownTypes = parsed.unknownTypes;
      expect([...unknownTypes].filter((x) => !NON_MESSAGE_TYPES.has(x.split('/')[0] ?? x))).toEqual([]);
      // The daemon did not warn once per unknown line.
      expect(daemon.logs.filter((l) => l.level === 'warn' && /unknown/i.test(l.msg)).length).toBeLessThanOrEqual(unknownTypes.size);

      // Tokens: the estimate before each usage report (calibrated on earlier reports) vs the report.
      await expectUsageTracked('claude-code', sb, file!);
    },
    TIMEOUT,
  );

  it(
    'hooks: the warm bootstrap reaches the first request of the next session',
    async () => {
      const { sb, server } = await setup();
      const first = await runClaude(sb, server, ['-p', 'fix the calculator so the tests pass', ...CLAUDE_ARGS]);
      expect(first.code, first.stderr).toBe(0);
      const harvested = await runContextd(sb, ['warm', 'harvest', `${sb.home}/.claude/projects`, '--state', sb.state]);
      expect(harvested.code, harvested.stderr).toBe(0);
      await daemonFor(sb);
      const installed = await runContextd(sb, ['install', 'claude-code', '--state', sb.state, '--socket', sb.socket]);
      expect(installed.code, installed.stderr).toBe(0);
      const before = server.requestsOf('main').length;
      const second = await runClaude(sb, server, ['-p', 'fix the calculator again so the tests pass', ...CLAUDE_ARGS]);
      expect(second.code, second.stderr).toBe(0);
      const firstOfSecond = mainTexts(server)[before];
      expect(firstOfSecond).toContain('contextd warm start');
      expect(server.requestsOf('invalid')).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'hooks: a constraint the agent’s own compaction summary dropped is re-injected into a later request',
    async () => {
      // 6 builds of 300 lines (~10k tokens each, under Claude Code's tool-output cap) overflow a 60k window.
      const { sb, server } = await setup(300, 6);
      const installed = await runContextd(sb, ['install', 'claude-code', '--state', sb.state, '--socket', sb.socket]);
      expect(installed.code, installed.stderr).toBe(0);
      const constraint = 'never edit files under vendor/';
      const r = await runClaude(sb, server, ['-p', `fix the calculator so the tests pass. Constraint: ${constraint}.`, ...CLAUDE_ARGS], { CLAUDE_CODE_AUTO_COMPACT_WINDOW: '60000' });
      expect(r.code, r.stderr).toBe(0);
      const seqOfCompaction = server.requestsOf('compaction').at(-1)?.seq;
      expect(seqOfCompaction).toBeDefined();
      const after = server.requestsOf('main').filter((q) => q.seq > seqOfCompaction!);
      expect(after.length).toBeGreaterThan(1);
      // The scripted summary leaves the constraint out: the first request after compaction lacks it...
      expect(textOf(after[0]?.body)).not.toContain(constraint);
      // ...and the hook puts it back, with a recall handle for the archived originals.
      const restored = after.find((q) => textOf(q.body).includes(constraint));
      expect(restored).toBeDefined();
      const text = textOf(restored!.body);
      const handle = /contextd recall (h_[0-9a-f]+)/.exec(text)?.[1];
      expect(handle).toBeDefined();
      const recalled = await runContextd(sb, ['recall', handle!, '--state', sb.state, '--json']);
      expect(recalled.code, recalled.stderr).toBe(0);
      expect(recalled.stdout).toContain(constraint);
      expect(server.requestsOf('invalid')).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'fork + claude --resume: the next request carries the summaries with handles, none of the replaced output, no orphan tool blocks',
    async () => {
      const { sb, server } = await setup();
      const first = await runClaude(sb, server, ['-p', 'fix the calculator so the tests pass', ...CLAUDE_ARGS]);
      expect(first.code, first.stderr).toBe(0);
      const [file] = transcripts(`${sb.home}/.claude/projects`);
      const forked = await runContextd(sb, ['fork', file!, '--budget', '6000', '--state', sb.state, '--json']);
      expect(forked.code, forked.stderr).toBe(0);
      const f = JSON.parse(forked.stdout) as { sessionId: string; file: string; tokensBefore: number; tokensAfter: number; edits: number };
      expect(f.edits).toBeGreaterThan(0);
      expect(f.tokensAfter).toBeLessThan(f.tokensBefore);
      // A valid parent chain from a null root.
      const forkLines = lines(f.file);
      forkLines.forEach((l, i) => expect(l['parentUuid']).toBe(i === 0 ? null : forkLines[i - 1]?.['uuid']));

      const before = server.requests.length;
      const resumed = await runClaude(sb, server, ['--resume', f.sessionId, '-p', 'STATUS-CHECK: continue', ...CLAUDE_ARGS]);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ is_error: false, result: 'All done: the tests still pass.' });
      const next = server.requests.slice(before).find((q) => q.kind === 'main');
      const text = textOf(next?.body);
      expect(text).toMatch(/\[contextd recall h_[0-9a-f]+\]/);
      expect(text).not.toContain('compiling module_');
      expect(server.requests.slice(before).filter((q) => q.kind === 'invalid')).toEqual([]);
    },
    TIMEOUT,
  );
});
