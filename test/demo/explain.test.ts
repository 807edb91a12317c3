import { describe, expect, it } from 'vitest';
import { demoLegend, recallExcerpt, summaryBlock } from '../../src/demo/explain.js';
import { archivedText } from '../../src/store/index.js';

describe('the demo explains itself', () => {
  it('has a legend line for every symbol the live lines use', () => {
    const legend = demoLegend(30).join('\n');
    for (const symbol of ['#', 'headroom', '⇢ plan', '−N tokens', 'h_']) expect(legend).toContain(symbol);
    expect(demoLegend(30)[1]).toContain(`[${'#'.repeat(10)}${'.'.repeat(20)}]`);
  });

  it('shows a summary with its handle and reason, cut after maxLines', () => {
    const text = Array.from({ length: 15 }, (_, i) => `line ${i}`).join('\n');
    const block = summaryBlock('h_1', 'stale-read', text, 12);
    expect(block[0]).toContain('handle h_1');
    expect(block[0]).toContain('reason stale-read');
    expect(block.slice(1, 13)).toEqual(Array.from({ length: 12 }, (_, i) => `    line ${i}`));
    expect(block[13]).toBe('    … (3 more line(s))');
  });

  it('prints the first lines of recalled originals and counts the rest', () => {
    const out = recallExcerpt(
      archivedText([
        { id: 'm1', role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"a.ts"}' }] },
        { id: 'm2', role: 'tool', toolName: 'read_file', text: 'one\ntwo\nthree\nfour\nfive\nsix' },
      ]),
      5,
    );
    expect(out).toEqual(['    --- assistant', '    → read_file {"path":"a.ts"}', '    --- tool (read_file)', '    one', '    two', '    … (4 more line(s))']);
    expect(recallExcerpt(archivedText([{ id: 'm3', role: 'user', text: 'short' }]))).toEqual(['    --- user', '    short']);
  });
});
