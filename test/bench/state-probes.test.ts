import { describe, expect, it } from 'vitest';
import { normalizeProbe } from '../../src/bench/retention.js';
import { quotedHandles, stateProbeKept, stateProbes, summariesNamingIds } from '../../src/bench/state-probes.js';
import type { Message } from '../../src/model/messages.js';

const patch = '*** Begin Patch\n*** Update File: src/a.ts\n@@ function run()\n-  const n = 1;\n+  const retryBudget = 2;\n*** End Patch';
const messages: Message[] = [
  { id: '1', role: 'user', text: 'fix it' },
  { id: '2', role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'apply_patch', arguments: JSON.stringify({ input: patch }) }] },
  { id: '3', role: 'tool', toolCallId: 'c1', text: 'Success. Updated the following files:\nM src/a.ts' },
  { id: '4', role: 'assistant', text: '', toolCalls: [{ id: 'c2', name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', 'npm test'] }) }] },
  { id: '5', role: 'tool', toolCallId: 'c2', isError: true, exitCode: 1, text: "AssertionError: expected '' to be '??'\n Tests  1 failed | 9 passed (10)\n ELIFECYCLE Test failed. See above for more details." },
];

describe('state probes', () => {
  it('takes the last edit with its gist, the final verdict and the last error', () => {
    const p = stateProbes(messages);
    expect(p).toEqual([
      { kind: 'edit', text: 'src/a.ts', all: ['src/a.ts'], anyOf: ['retryBudget'] },
      { kind: 'verdict', text: 'Tests 1 failed | 9 passed (10)', all: ['Tests 1 failed | 9 passed (10)'], anyOf: [] },
      { kind: 'error', text: "AssertionError: expected '' to be '??'", all: ["AssertionError: expected '' to be '??'"], anyOf: [] },
    ]);
    const edit = p[0]!;
    expect(stateProbeKept(edit, normalizeProbe('edited src/a.ts (+1 −1) changed retryBudget'), normalizeProbe)).toBe(true);
    // the file alone is not the gist
    expect(stateProbeKept(edit, normalizeProbe('edited src/a.ts'), normalizeProbe)).toBe(false);
  });

  it('counts summaries naming section ids and collects quoted handles', () => {
    const ctx = [
      { role: 'assistant' as const, content: '[contextd recall h_0123456789abcdef] Same output as newer section s54.' },
      { role: 'assistant' as const, content: '[contextd recall h_fedcba9876543210] Compacted tool-call (low-score).' },
      { role: 'user' as const, content: 'see s54 please' },
      { role: 'assistant' as const, content: '[contextd recall h_00000000000000aa] Refs: https://survey.example.com/s3/76/x; read assets/s3/a.ts' },
    ];
    expect(summariesNamingIds(ctx)).toBe(1);
    expect(quotedHandles(ctx)).toEqual(['h_0123456789abcdef', 'h_fedcba9876543210', 'h_00000000000000aa']);
  });
});
