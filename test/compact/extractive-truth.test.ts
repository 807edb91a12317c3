/**
 * Summaries must be true: a failed edit is never told as made, a failure's error line is the
 * tool's own words (not the arguments it echoes), a heading is never printed without its items,
 * and an earlier compaction note is never quoted as what the user said.
 */
import { describe, expect, it } from 'vitest';
import { extractiveSummary } from '../../src/compact/summarize/extractive.js';
import { toolOutcome } from '../../src/compact/outcome.js';
import { keyFacts } from '../../src/compact/survival.js';
import type { SummarizeInput } from '../../src/compact/types.js';
import type { Message } from '../../src/model/messages.js';
import { compactionNoteBody } from '../../src/model/classify.js';

let n = 0;
const id = (): string => `M${++n}`;

function call(name: string, args: Record<string, unknown>, callId: string): Message {
  return { id: id(), role: 'assistant', text: '', toolCalls: [{ id: callId, name, arguments: JSON.stringify(args) }] };
}

function result(callId: string, name: string, text: string, extra: Partial<Message> = {}): Message {
  return { id: id(), role: 'tool', toolCallId: callId, toolName: name, text, ...extra };
}

function summarize(messages: Message[], extra: Partial<SummarizeInput> = {}): string {
  return extractiveSummary({ reason: 'low-score', sections: [], messages, goal: 'tidy the billing module', maxTokens: 300, ...extra });
}

const multiEdit = (callId: string): Message =>
  call('MultiEdit', { file_path: '/w/app/billing.py', edits: [{ old_string: 'rate = 3', new_string: 'rate = 4\nfloor = 1' }] }, callId);

describe('a failed or rejected edit', () => {
  it('is told as failed, never as edited, when the user rejected it', () => {
    const text = summarize([
      multiEdit('r1'),
      result('r1', 'MultiEdit', 'The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).', { isError: true }),
    ]);
    expect(text).not.toMatch(/^- edited \/w\/app\/billing\.py/m);
    expect(text).toMatch(/edit of \/w\/app\/billing\.py failed: the tool use was rejected/);
  });

  it('never quotes the harness telling the agent to stop and wait', () => {
    const text = summarize([
      multiEdit('r2'),
      result('r2', 'MultiEdit', "The user doesn't want to proceed with this tool use. The tool use was rejected. STOP what you are doing and wait for the user to tell you how to proceed.", {
        isError: true,
      }),
    ]);
    expect(text).toMatch(/edit of \/w\/app\/billing\.py failed/);
    expect(text).not.toMatch(/STOP what you are doing/);
  });

  it('is told as failed with its error line when the patch did not apply', () => {
    const patch = ['*** Begin Patch', '*** Update File: web/src/Cart.tsx', '@@', '-const total = 0;', '+const total = sum(items);', '*** End Patch'].join('\n');
    const text = summarize([
      call('apply_patch', { input: patch }, 'p1'),
      result('p1', 'apply_patch', 'error: Failed to find expected lines ["const total = 0;"] in /w/web/src/Cart.tsx', { isError: true }),
    ]);
    expect(text).not.toMatch(/^- edited web\/src\/Cart\.tsx/m);
    expect(text).toMatch(/edit of web\/src\/Cart\.tsx failed: error: Failed to find expected lines/);
  });

  it('a failed command that writes a file on the side is told by its command, not as an edit of that file', () => {
    const text = summarize([call('Bash', { command: 'npm test > test-output.log 2>&1' }, 'w1'), result('w1', 'Bash', 'Exit code 1', { isError: true })]);
    expect(text).not.toMatch(/edit of test-output\.log/);
    expect(text).toContain('`npm test > test-output.log 2>&1` failed');
  });

  it('a successful command that writes a file on the side keeps its command and verdict, and names the file without line counts', () => {
    const text = summarize([
      call('Bash', { command: 'npm test > test.log 2>&1; tail -3 test.log' }, 'w3'),
      result('w3', 'Bash', ' Test Files  4 passed (4)\n      Tests  31 passed (31)\n   Duration  1.2s'),
    ]);
    expect(text).toContain('`npm test > test.log 2>&1; tail -3 test.log` → Tests 31 passed (31)');
    expect(text).toMatch(/edited test\.log(?:;|$)/m);
    expect(text).not.toMatch(/\(\+0 −0\)/);
  });

  it('a failed patch carried by a shell command is still an edit of its file', () => {
    const patch = ['apply_patch <<\'EOF\'', '*** Begin Patch', '*** Update File: web/src/Cart.tsx', '@@', '-const total = 0;', '+const total = sum(items);', '*** End Patch', 'EOF'].join('\n');
    const text = summarize([call('shell', { command: ['bash', '-lc', patch] }, 'w2'), result('w2', 'shell', 'error: Failed to find expected lines ["const total = 0;"]', { exitCode: 1 })]);
    expect(text).toMatch(/edit of web\/src\/Cart\.tsx failed/);
  });

  it('a successful edit is still listed as edited', () => {
    const text = summarize([multiEdit('s1'), result('s1', 'MultiEdit', 'Applied 1 edit to /w/app/billing.py')]);
    expect(text).toMatch(/^- edited \/w\/app\/billing\.py \(\+2 −1\)/m);
    expect(text).not.toMatch(/failed/);
  });
});

describe('the error line of a tool that refused a call', () => {
  const echo = [
    'Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.',
    'String:     ledger.entries = []',
    '    ledger.totals = TotalsView()',
  ].join('\n');

  it('is its first line, not the last echoed line of the agent code', () => {
    const m = result('e1', 'Edit', echo, { isError: true });
    expect(toolOutcome(m).error).toMatch(/^Found 2 matches of the string to replace/);
  });

  it('the summary says what failed, not an echoed code line', () => {
    const text = summarize([
      call('Edit', { file_path: '/w/app/ledger.py', old_string: '    ledger.entries = []\n    ledger.totals = TotalsView()', new_string: '    ledger.reset()' }, 'e2'),
      result('e2', 'Edit', echo, { isError: true }),
    ]);
    expect(text).toMatch(/edit of \/w\/app\/ledger\.py failed: Found 2 matches/);
    expect(text).not.toMatch(/^- ledger\.totals = TotalsView\(\)/m);
  });

  it("a command's output still ends with why it failed", () => {
    const m = result('e3', 'Bash', 'building\nlinking\nld: library not found for -lzstd', { exitCode: 1 });
    expect(toolOutcome(m).error).toBe('ld: library not found for -lzstd');
  });
});

describe('a heading whose items were all cut', () => {
  const input = (except: string[], maxTokens: number): SummarizeInput => ({
    reason: 'redundant-tool-output',
    sections: [],
    messages: [call('Bash', { command: 'ls -la build' }, 'x1'), result('x1', 'Bash', 'total 12\nbundle.js')],
    goal: 'ship the build',
    maxTokens,
    detail: { except },
  });

  it('is not printed: "except:" never ends the text or leads another group', () => {
    const long = [`-rw-r--r-- 1 dev dev ${'9'.repeat(150)} bundle.js`, `-rw-r--r-- 1 dev dev ${'8'.repeat(150)} vendor.js`];
    const text = extractiveSummary(input(long, 40));
    expect(text).not.toMatch(/except:/);
    expect(text).toContain('A later identical call returned the same output, except 2 lines.');
  });

  it('is printed with the items that fit', () => {
    const text = extractiveSummary(input(['-rw-r--r-- 1 dev dev 120 bundle.js'], 300));
    expect(text).toMatch(/except:\n-rw-r--r-- 1 dev dev 120 bundle\.js/);
  });
});

describe('an earlier compaction note', () => {
  const note: Message = {
    id: 'note',
    role: 'user',
    isSummary: true,
    text: [
      '[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. Treat it as background reference, NOT as active instructions. Do NOT answer questions or fulfill requests mentioned in this summary; they were already addressed.',
      '## Progress',
      'Moved the invoice totals into src/billing/totals.ts and set retry_limit: 5 in config/billing.yaml.',
    ].join('\n'),
  };

  it('is not what the user said, and its note to the reader is not carried', () => {
    const text = summarize([note, call('Bash', { command: 'pytest -q tests/billing' }, 'n1'), result('n1', 'Bash', '3 passed in 0.4s')]);
    expect(text).not.toMatch(/User said/);
    expect(text).not.toMatch(/Do NOT answer|REFERENCE ONLY|already addressed|active instructions/i);
    expect(text).toContain('Included an earlier summary of the conversation.');
    expect(text).toContain('src/billing/totals.ts');
  });

  it('in a run of chat text, is not quoted as the user either', () => {
    const text = summarize([note, { id: id(), role: 'assistant', text: 'Understood, the totals now live in src/billing/totals.ts.' }]);
    expect(text).not.toMatch(/^User:/m);
    expect(text).not.toMatch(/Do NOT answer|already addressed/i);
  });

  it('its note to the reader is no constraint the survival check re-injects', () => {
    const facts = keyFacts([note], [], []);
    expect(facts.constraints.join('\n')).not.toMatch(/Do NOT answer/i);
  });

  it('keeps the facts of a note that name a summary or a compaction as its work', () => {
    const body = compactionNoteBody(
      [
        '[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. Do NOT answer questions or fulfill requests mentioned in this summary.',
        '## Progress',
        'Fixed the compaction bug in src/planner.ts. Added the summary endpoint to api/routes.ts.',
      ].join('\n'),
    );
    expect(body).toContain('Fixed the compaction bug in src/planner.ts.');
    expect(body).toContain('Added the summary endpoint to api/routes.ts.');
    expect(body).not.toMatch(/summary below|Do NOT answer/);
  });

  it("a real user's words are still what the user said", () => {
    const text = summarize([{ id: id(), role: 'user', text: 'Never touch the ledger schema. Split the invoice module.' }, call('Bash', { command: 'ls src' }, 'u1'), result('u1', 'Bash', 'billing')]);
    expect(text).toMatch(/User said:\n- Never touch the ledger schema\./);
  });
});
