/**
 * The real Codex CLI binary (0.169.0, a pinned devDependency) against the scripted model
 * server over the Responses API, with the real daemon watching its CODEX_HOME: the
 * format-drift alarm for Codex rollouts and the proof that hooks and fork reach its requests.
 */
import { describe, expect, it } from 'vitest';
import { e2eScope } from '../e2e/spawn.js';
import { lines, makeSandbox, parsedTools, runCodex, runContextd, expectUsageTracked, transcripts, type Sandbox } from './harness.js';
import { codingTask, startModelServer, textOf, type ModelServer } from './model-server/index.js';

const TIMEOUT = 240_000;
/** Line types Codex 0.169 writes that carry no conversation message (counted, not parsed). */
const NON_MESSAGE_TYPES = new Set(['token_usage_record', 'world_state', 'event_msg/item_completed', 'event_msg/thread_settings_applied', 'event_msg/task_started', 'event_msg/task_complete']);

const scope = e2eScope();

async function setup(): Promise<{ sb: Sandbox; server: ModelServer }> {
  const sb = makeSandbox(100);
  const server = await startModelServer({ script: codingTask({ builds: 2 }), workspace: sb.workspace, lifetimeMs: TIMEOUT });
  scope.defer(() => sb.cleanup());
  scope.defer(() => server.close());
  return { sb, server };
}

async function startDaemon(sb: Sandbox): Promise<void> {
  await scope.daemon(['--watch', `${sb.codexHome}/sessions`, '--state', sb.state, '--socket', sb.socket]);
}

describe('Codex CLI 0.169.0 against the scripted model server', () => {
  it(
    'runs the coding task; the daemon parses every message item, pairs every call and tracks the agent’s usage',
    async () => {
      const { sb, server } = await setup();
      await startDaemon(sb);
      const r = await runCodex(sb, server, ['fix the calculator so the tests pass']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('Fixed: src/calc.txt now adds; the tests pass.');
      expect(server.requestsOf('invalid')).toEqual([]);

      const [file] = transcripts(`${sb.codexHome}/sessions`);
      const raw = lines(file!);
      const payloads = raw.filter((l) => l['type'] === 'response_item').map((l) => l['payload'] as { type: string; call_id?: string });
      const calls = payloads.filter((p) => p.type === 'function_call').map((p) => p.call_id);
      const outputs = payloads.filter((p) => p.type === 'function_call_output').map((p) => p.call_id);
      expect(calls.length).toBe(6);
      expect(new Set(outputs)).toEqual(new Set(calls));

      const parsed = await parsedTools(file!);
      expect(parsed.callIds).toEqual(calls);
      expect(parsed.resultIds).toEqual(outputs);
      expect([...parsed.unknownTypes].filter((x) => !NON_MESSAGE_TYPES.has(x))).toEqual([]);

      await expectUsageTracked('codex', sb, file!);
    },
    TIMEOUT,
  );

  it(
    'hooks: UserPromptSubmit brings the warm bootstrap into the first request (hook trust bypassed for the test)',
    async () => {
      const { sb, server } = await setup();
      const first = await runCodex(sb, server, ['fix the calculator so the tests pass']);
      expect(first.code, first.stderr).toBe(0);
      const harvested = await runContextd(sb, ['warm', 'harvest', `${sb.codexHome}/sessions`, '--state', sb.state]);
      expect(harvested.code, harvested.stderr).toBe(0);
      const installed = await runContextd(sb, ['install', 'codex', '--state', sb.state, '--socket', sb.socket]);
      expect(installed.code, installed.stderr).toBe(0);
      const before = server.requestsOf('main').length;
      // Codex runs a newly installed hook only once the user trusts it (/hooks in the TUI);
      // automation vouches for it with --dangerously-bypass-hook-trust. The daemon is down
      // here, so the hook reads the template store directly.
      const second = await runCodex(sb, server, ['--dangerously-bypass-hook-trust', 'fix the calculator again so the tests pass']);
      expect(second.code, second.stderr).toBe(0);
      expect(textOf(server.requestsOf('main')[before]?.body)).toContain('contextd warm start');
    },
    TIMEOUT,
  );

  it(
    'fork + codex exec resume: the next request carries the summaries with handles, none of the replaced output, no orphan calls',
    async () => {
      const { sb, server } = await setup();
      const first = await runCodex(sb, server, ['fix the calculator so the tests pass']);
      expect(first.code, first.stderr).toBe(0);
      const [file] = transcripts(`${sb.codexHome}/sessions`);
      const forked = await runContextd(sb, ['fork', file!, '--budget', '9000', '--state', sb.state, '--json']);
      expect(forked.code, forked.stderr).toBe(0);
      const f = JSON.parse(forked.stdout) as { sessionId: string; edits: number; tokensBefore: number; tokensAfter: number };
      expect(f.edits).toBeGreaterThan(0);
      expect(f.tokensAfter).toBeLessThan(f.tokensBefore);
      const before = server.requests.length;
      const resumed = await runCodex(sb, server, ['resume', f.sessionId, 'STATUS-CHECK: continue']);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain('All done: the tests still pass.');
      const next = server.requests.slice(before).find((q) => q.kind === 'main');
      const text = textOf(next?.body);
      expect(text).toMatch(/\[contextd recall h_[0-9a-f]+\]/);
      expect(text).not.toContain('compiling module_');
      expect(server.requests.slice(before).filter((q) => q.kind === 'invalid')).toEqual([]);
    },
    TIMEOUT,
  );
});
