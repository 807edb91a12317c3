/**
 * The one builder of archive records (daemon plans, proxy plans, `contextd compact`, the
 * retention bench): each edit that quotes a handle archives exactly its sections' originals,
 * and the redaction filter the daemon wires (harvest's redactMessages) is applied and counted.
 */
import { describe, expect, it } from 'vitest';
import { archiveEntries, redactEntries, type ArchivableEdit } from '../../src/compact/index.js';
import { redactMessages } from '../../src/harvest/redact.js';
import { SessionModel } from '../../src/model/index.js';

const KEY = `AKIA${'Q'.repeat(12)}WXYZ`;

function model(): SessionModel {
  const m = new SessionModel({ sessionId: 's-arch', budgetTokens: 100_000 });
  m.apply({ type: 'message', message: { id: 'u1', role: 'user', text: 'deploy the service' } });
  m.apply({ type: 'message', message: { id: 'a1', role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'Bash', arguments: '{"command":"env"}' }] } });
  m.apply({ type: 'message', message: { id: 't1', role: 'tool', text: `AWS_ACCESS_KEY_ID=${KEY}\nPATH=/usr/bin`, toolCallId: 'c1' } });
  m.apply({ type: 'message', message: { id: 'a2', role: 'assistant', text: 'Deployed.' } });
  return m;
}

describe('archive entries', () => {
  it('holds the originals of each edit that quotes a handle, in order, and none for one that does not', () => {
    const m = model();
    const sections = m.sections();
    const withTool = sections.filter((s) => s.messageIds.some((id) => id === 'a1' || id === 't1')).map((s) => s.id);
    const edits: ArchivableEdit[] = [
      { handle: 'h_00000000000000aa', editId: 'e1', reason: 'bulky-output', replaces: withTool, tokensBefore: 42 },
      { editId: 'e2', reason: 'middle', replaces: [sections[0]?.id ?? ''], tokensBefore: 5 },
    ];
    const entries = archiveEntries(m, edits, { sessionId: 's-arch', planId: 'p1', createdAt: 7 });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ handle: 'h_00000000000000aa', sessionId: 's-arch', planId: 'p1', editId: 'e1', reason: 'bulky-output', sectionIds: withTool, tokens: 42, createdAt: 7 });
    expect(entries[0]?.messages.map((x) => x.id)).toEqual(['a1', 't1']);
    expect(archiveEntries(m, edits, { sessionId: 's-arch', createdAt: 7 })[0]).not.toHaveProperty('planId');
  });

  it('redacts originals through the filter and counts what it replaced; without one keeps them as they are', async () => {
    const m = model();
    const all = m.sections().map((s) => s.id);
    const entries = archiveEntries(m, [{ handle: 'h_00000000000000bb', editId: 'e1', reason: 'manual', replaces: all, tokensBefore: 60 }], { sessionId: 's-arch', createdAt: 1 });
    const [redacted] = await redactEntries(entries, redactMessages);
    expect(JSON.stringify(redacted?.messages)).not.toContain(KEY);
    expect(redacted?.redactions.reduce((n, r) => n + r.count, 0)).toBeGreaterThan(0);
    expect(JSON.stringify(entries[0]?.messages)).toContain(KEY); // the input is not mutated
    const [kept] = await redactEntries(entries, undefined);
    expect(kept?.messages).toEqual(entries[0]?.messages);
    expect(kept?.redactions).toEqual([]);
  });
});
