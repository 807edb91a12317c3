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

describe('one spelling of a repository for storing and finding templates', () => {
  it('harvest and warm normalize alike', async () => {
    const { repoName } = await import('../../src/harvest/markers.js');
    const { normalizeRepo } = await import('../../src/warm/select.js');
    for (const r of ['acme/contextd/', 'https://github.com/acme/contextd)', 'git@github.com:acme/contextd.git', 'https://gitlab.com/acme/contextd/-/tree/main', 'contextd.git']) {
      expect(repoName(r)).toBe(normalizeRepo(r));
    }
    expect(normalizeRepo('acme/contextd/')).toBe('acme/contextd');
    expect(normalizeRepo('https://github.com/acme/contextd)')).toBe('acme/contextd');
  });
});
