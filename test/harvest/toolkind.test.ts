import { describe, expect, it } from 'vitest';
import { toolKind } from '../../src/harvest/toolcalls.js';
import { toolAction } from '../../src/model/toolargs.js';

describe('tool kinds agree with what compaction reads from a call', () => {
  it('classifies read and write tools by their exact names', () => {
    for (const t of ['Read', 'read_file', 'view', 'mcp__fs__read_file', 'ls']) expect(toolKind(t)).toBe('read');
    for (const t of ['Edit', 'MultiEdit', 'Write', 'apply_patch', 'str_replace', 'mcp__fs__write_file', 'delete_file']) expect(toolKind(t)).toBe('edit');
    expect(toolKind('Bash')).toBe('shell');
    expect(toolKind('Grep')).toBe('search');
    expect(toolKind('WebFetch')).toBe('web');
  });

  it('does not take a todo list for a file edit', () => {
    expect(toolKind('TodoWrite')).toBe('other');
    expect(toolKind('TodoRead')).toBe('other');
    expect(toolAction({ id: 'c', name: 'TodoWrite', arguments: '{"todos":[]}' }).writes).toEqual([]);
  });
});
