import { describe, expect, it } from 'vitest';
import { detectorContext } from '../../src/compact/planner.js';
import { lowScore, redundantToolOutput, staleRead, supersededReasoning, verboseErrorTrace } from '../../src/compact/detectors/index.js';
import { Script, fileBody, jsTrace } from './helpers.js';

function sectionOfCall(model: ReturnType<Script['model']>, callId: string): string {
  const s = model.sections().find((x) => model.messagesOf(x.id).some((m) => m.toolCallId === callId));
  if (!s) throw new Error(`no section for ${callId}`);
  return s.id;
}

describe('redundant-tool-output', () => {
  it('points an older near-duplicate output at the newest one, with the differing lines', () => {
    const base = Array.from({ length: 40 }, (_, i) => ` ✓ tests/case${i}.test.ts (${i} ms)`);
    const model = new Script()
      .user('Run the test suite and fix failures in src/pool.ts')
      .tool('Bash', { command: 'npm test' }, [...base, ' FAIL tests/pool.test.ts', 'Tests: 1 failed'].join('\n'))
      .assistant('Looking at the failure.')
      .tool('Bash', { command: 'npm test' }, [...base, 'Tests: 41 passed'].join('\n'))
      .model();
    const cands = redundantToolOutput.detect(detectorContext(model));
    expect(cands).toHaveLength(1);
    const c = cands[0]!;
    expect(c.sectionIds).toEqual([sectionOfCall(model, 'c0')]);
    expect(c.detail['newer']).toBe(sectionOfCall(model, 'c1'));
    expect(c.detail['except']).toContain('FAIL tests/pool.test.ts');
  });

  it('calls only the same arguments the same call: other edits of a file, other search patterns, long todo lists', () => {
    // results long enough to be pointed at, and alike: only the arguments tell the calls apart
    const updated = Array.from({ length: 30 }, (_, i) => `The file /w/src/report.py has been updated; line ${i} shown for review.`).join('\n');
    const noMatch = Array.from({ length: 30 }, (_, i) => `searched src/module${i}: no match`).join('\n');
    const todos = (last: string): { todos: { content: string; status: string }[] } => ({
      todos: [...Array.from({ length: 12 }, (_, i) => ({ content: `Step ${i} of the report refactor, with its checks`, status: 'completed' })), { content: last, status: 'pending' }],
    });
    const model = new Script()
      .user('Rename the totals helpers in report.py and find the callers')
      .tool('Edit', { file_path: '/w/src/report.py', old_string: 'def total_rows(rows):', new_string: 'def count_rows(rows):' }, updated)
      .tool('Edit', { file_path: '/w/src/report.py', old_string: 'def total_cost(items):', new_string: 'def sum_cost(items):' }, updated)
      .tool('Grep', { path: 'src', pattern: 'total_rows' }, noMatch)
      .tool('Grep', { path: 'src', pattern: 'total_cost' }, noMatch)
      .tool('TodoWrite', todos('Update the callers of count_rows'), updated)
      .tool('TodoWrite', todos('Update the callers of sum_cost'), updated)
      .model();
    expect(redundantToolOutput.detect(detectorContext(model))).toEqual([]);
  });

  it('still calls a command run again the same call when only its description differs', () => {
    const lines = Array.from({ length: 40 }, (_, i) => ` ✓ tests/case${i}.test.ts`);
    const model = new Script()
      .user('Run the tests')
      .tool('Bash', { command: 'npm test', description: 'Run the tests' }, [...lines, 'Tests: 40 passed'].join('\n'))
      .tool('Bash', { command: 'npm test', description: 'Run the tests again', timeout: 120000 }, [...lines, 'Tests: 40 passed'].join('\n'))
      .model();
    expect(redundantToolOutput.detect(detectorContext(model)).map((c) => c.sectionIds)).toEqual([[sectionOfCall(model, 'c0')]]);
  });

  it('leaves different outputs alone', () => {
    const model = new Script()
      .user('Check the two files')
      .tool('Bash', { command: 'cat a.txt' }, fileBody('alpha'))
      .tool('Bash', { command: 'cat b.txt' }, fileBody('beta'))
      .model();
    expect(redundantToolOutput.detect(detectorContext(model))).toEqual([]);
  });
});

describe('stale-read', () => {
  it('flags a read superseded by a later edit or read of the same path, not the latest read', () => {
    const model = new Script()
      .user('Refactor the pool module in src/server/pool.ts')
      .tool('Read', { file_path: '/repo/src/server/pool.ts' }, fileBody('pool'))
      .tool('Edit', { file_path: '/repo/src/server/pool.ts', old_string: 'a', new_string: 'b' }, 'The file has been updated.')
      .tool('Bash', { command: 'cat src/server/pool.ts' }, fileBody('poolv2'))
      .tool('Read', { file_path: '/repo/src/other.ts' }, fileBody('other'))
      .model();
    const cands = staleRead.detect(detectorContext(model));
    expect(cands.map((c) => c.sectionIds[0])).toEqual([sectionOfCall(model, 'c0')]);
    expect(cands[0]!.detail['paths']).toEqual(['/repo/src/server/pool.ts']);
  });

  it('understands apply_patch and sed -i as edits', () => {
    const model = new Script()
      .user('Fix the config loader')
      .tool('shell', { command: ['bash', '-lc', 'sed -n 1,200p lib/config/loader.py'] }, fileBody('loader'))
      .tool('apply_patch', { input: '*** Begin Patch\n*** Update File: lib/config/loader.py\n@@\n-a\n+b\n*** End Patch' }, 'Success.')
      .tool('shell', { command: ['bash', '-lc', 'head -50 lib/util.py'] }, fileBody('util'))
      .tool('shell', { command: ['bash', '-lc', "sed -i 's/a/b/' lib/util.py"] }, '')
      .model();
    const ids = staleRead.detect(detectorContext(model)).map((c) => c.sectionIds[0]);
    expect(ids).toEqual([sectionOfCall(model, 'c0'), sectionOfCall(model, 'c2')]);
  });
});

describe('superseded-reasoning', () => {
  it('collects the abandoned exploration before a pivot, not the pivot or what follows', () => {
    const model = new Script()
      .user('Make the cache thread-safe in lib/cache/lru.py')
      .assistant('Let me try wrapping every method in a global lock.', 'A global lock is simplest; it may hurt throughput.')
      .tool('Edit', { file_path: 'lib/cache/lru.py', old_string: 'def get', new_string: 'def get_locked' }, 'ok')
      .tool('Bash', { command: 'pytest -q' }, `${'.'.repeat(40)}\nFAILED tests/test_lru.py::test_concurrent - deadlock detected after 30s timeout\n1 failed, 40 passed`, true)
      .assistant("That didn't work: the global lock deadlocks on re-entry. Instead I'll use an RLock per shard.")
      .tool('Edit', { file_path: 'lib/cache/lru.py', old_string: 'Lock()', new_string: 'RLock()' }, 'ok')
      .model();
    const cands = supersededReasoning.detect(detectorContext(model));
    expect(cands).toHaveLength(1);
    const c = cands[0]!;
    const pivot = model.sections().find((s) => model.messagesOf(s.id).some((m) => m.text.startsWith("That didn't work")));
    expect(c.detail['pivot']).toBe(pivot!.id);
    expect(c.sectionIds).toContain(sectionOfCall(model, 'c0'));
    expect(c.sectionIds).toContain(sectionOfCall(model, 'c1'));
    expect(c.sectionIds).not.toContain(pivot!.id);
    expect(c.sectionIds).not.toContain(sectionOfCall(model, 'c2'));
  });
});

describe('verbose-error-trace', () => {
  it('keeps the exception line, the first project frame and the outcome', () => {
    const model = new Script()
      .user('Why does the pool test crash?')
      .tool('Bash', { command: 'npm test' }, jsTrace('src/server/pool.ts'), true)
      .model();
    const cands = verboseErrorTrace.detect(detectorContext(model));
    expect(cands).toHaveLength(1);
    expect(cands[0]!.detail).toEqual({
      exception: "TypeError: Cannot read properties of undefined (reading 'release')",
      projectFrame: 'at acquireConnection (src/server/pool.ts:42:13)',
      last: 'Test run failed: 1 failed, 12 passed',
    });
  });

  it('ignores short traces', () => {
    const model = new Script().user('hi there, run it').tool('Bash', { command: 'node x.js' }, 'Error: boom\n    at main (x.js:1:1)', true).model();
    expect(verboseErrorTrace.detect(detectorContext(model))).toEqual([]);
  });
});

describe('low-score', () => {
  it('lists every compactable section, lowest score first, never anchors or pending calls', () => {
    const model = new Script()
      .system('You are a coding agent.')
      .user('Implement the retry helper in src/util/retry.ts. Never retry more than 5 times.')
      .tool('Read', { file_path: 'src/util/retry.ts' }, fileBody('retry'))
      .assistant('I read the helper; next I will edit it.')
      .tool('Bash', { command: 'ls src' }, 'util\nserver\ndb')
      .pendingCall('Bash', { command: 'npm test' })
      .model();
    const cands = lowScore.detect(detectorContext(model));
    const byId = new Map(model.sections().map((s) => [s.id, s]));
    expect(cands.length).toBeGreaterThan(0);
    for (const c of cands) {
      const s = byId.get(c.sectionIds[0]!)!;
      expect(s.anchor).toBe(false);
      expect(s.pending ?? false).toBe(false);
      expect(s.kind).not.toBe('system');
    }
    const scores = cands.map((c) => byId.get(c.sectionIds[0]!)!.score);
    expect([...scores].sort((a, b) => a - b)).toEqual(scores);
    expect(model.sections().some((s) => s.pending)).toBe(true);
  });
});
