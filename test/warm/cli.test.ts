import { afterEach, describe, expect, it, vi } from 'vitest';
import { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerWarm } from '../../src/cli/warm.js';
import { isContextdError } from '../../src/util/errors.js';
import { resolveStateDir, stateDbPath } from '../../src/warm/index.js';
import { generateTranscript, writeTranscripts } from '../fixtures/transcripts.js';
import { cleanup, codingSession, tempDir } from '../harvest/fixtures.js';
import { harvestSession } from '../../src/harvest/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { openDb } from '../../src/store/db.js';
import { TemplateStore } from '../../src/store/templates.js';
import { silentLogger } from '../../src/util/logger.js';

afterEach(() => {
  vi.restoreAllMocks();
  process.exitCode = undefined;
  cleanup();
});

async function run(...args: string[]): Promise<string> {
  const program = new Command('contextd').exitOverride();
  registerWarm(program);
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  });
  try {
    await program.parseAsync(['node', 'contextd', 'warm', ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

describe('contextd warm CLI', () => {
  it('harvests, lists, shows, bootstraps, tests, exports, imports and deletes', async () => {
    const state = join(tempDir(), 'state');
    const [file, otherFile] = writeTranscripts(tempDir(), [
      generateTranscript('codex', { seed: 1, repo: 'acme/dateparse', task: 'Wire LM Studio into the local chat handler of acme/dateparse and fix the failing date parser test.' }),
      generateTranscript('openai-chat', { seed: 2, repo: 'octo/widgets', task: 'Rename the widget registry in octo/widgets and update its tests.' }),
    ]);
    const harvest = JSON.parse(await run('harvest', file ?? '', otherFile ?? '', '--state', state, '--json')) as {
      files: number;
      harvested: number;
      filesPerSecond: number;
      templates: string[];
    };
    expect(harvest.files).toBe(2);
    expect(harvest.harvested).toBe(2);
    expect(harvest.filesPerSecond).toBeGreaterThan(0);
    expect(existsSync(stateDbPath(state))).toBe(true);

    const list = JSON.parse(await run('list', '--state', state, '--json')) as { templates: { id: string; name: string; taskType: string }[] };
    expect(list.templates.map((t) => t.id).sort()).toEqual([...harvest.templates].sort());
    const human = await run('list', '--state', state);
    expect(human.split('\n')[0]).toMatch(/^id\s+name\s+type\s+sessions\s+usage\s+success$/);
    const id = list.templates.find((t) => t.name.startsWith('Wire LM Studio'))?.id ?? '';
    expect(id).not.toBe('');

    const show = JSON.parse(await run('show', id, '--state', state, '--json')) as { id: string; repo: string; items: unknown[] };
    expect(show).toMatchObject({ id, repo: 'acme/dateparse' });
    expect(show.items.length).toBeGreaterThan(0);
    expect(await run('show', id, '--state', state)).toContain('markers:');

    const boot = JSON.parse(await run('bootstrap', 'wire LM Studio into the local chat handler', '--repo', 'acme/dateparse', '--budget', '600', '--state', state, '--json')) as {
      templateIds: string[];
      tokens: number;
      messages: { role: string; content: string }[];
    };
    expect(boot.templateIds[0]).toBe(id);
    expect(boot.tokens).toBeLessThanOrEqual(600);
    expect(boot.messages[0]?.role).toBe('system');
    expect(await run('bootstrap', 'wire LM Studio', '--state', state)).toMatch(/tokens of 2000/);
    const test = JSON.parse(await run('test', id, 'anything', '--budget', '300', '--state', state, '--json')) as { tokens: number; templateIds: string[] };
    expect(test.templateIds).toEqual([id]);
    expect(test.tokens).toBeLessThanOrEqual(300);

    const exportFile = join(tempDir(), 'templates.json');
    expect(await run('export', exportFile, '--state', state)).toMatch(/^exported 2 templates/);
    expect(JSON.parse(readFileSync(exportFile, 'utf8'))).toMatchObject({ format: 'contextd-warm-templates', schemaVersion: 1 });
    const other = join(tempDir(), 'other');
    const imported = JSON.parse(await run('import', exportFile, '--state', other, '--json')) as { templates: { created: number }; bad: unknown[] };
    expect(imported).toMatchObject({ templates: { created: 2 }, bad: [] });

    expect(await run('delete', id, '--state', state)).toBe(`deleted ${id}\n`);
    const after = JSON.parse(await run('list', '--state', state, '--json')) as { templates: unknown[] };
    expect(after.templates).toHaveLength(1);
  });

  it('usage errors: unknown template, bad budget, missing state', async () => {
    const state = join(tempDir(), 'state');
    const [file] = writeTranscripts(tempDir(), [generateTranscript('claude-code', { seed: 3 })]);
    await run('harvest', file ?? '', '--state', state, '--json');
    await expect(run('show', 't-000000000000', '--state', state)).rejects.toSatisfy((e: unknown) => isContextdError(e, 'UNKNOWN_TEMPLATE'));
    await expect(run('delete', 't-000000000000', '--state', state)).rejects.toThrow(/no template/);
    await expect(run('bootstrap', 'x', '--budget', '-3', '--state', state)).rejects.toThrow(/--budget must be a positive integer/);
    await expect(run('list', '--state', join(tempDir(), 'nothing-here'))).rejects.toThrow(/no contextd state/);
  });

  it('resolves the state dir from the flag, XDG_STATE_HOME, or ~/.local/state', () => {
    expect(resolveStateDir('/x/y', {})).toBe('/x/y');
    expect(resolveStateDir(undefined, { XDG_STATE_HOME: '/xdg' })).toBe('/xdg/contextd');
    expect(resolveStateDir(undefined, { HOME: '/home/u' })).toBe('/home/u/.local/state/contextd');
    expect(resolveStateDir(undefined, { STATE_DIRECTORY: '/var/lib/contextd', XDG_STATE_HOME: '/xdg' })).toBe('/var/lib/contextd');
  });
});

describe('contextd warm show wording', () => {
  it('says recoveries, names the project rather than the folder it ran in, and never shows an interruption marker as the prompt', async () => {
    const state = join(tempDir(), 'state');
    const db = openDb(stateDbPath(state));
    const messages = [
      { id: 'x0', role: 'user' as const, text: '[Request interrupted by user for tool use]', injected: true },
      { id: 'x1', role: 'user' as const, text: '[Request interrupted by user for tool use]' },
      ...codingSession().messages.filter((m) => m.role !== 'system'),
    ];
    const r = await harvestSession({ sessionId: 's', messages, meta: { cwd: '/Users/dain/workspace/claude-code-log/test' } }, { store: new TemplateStore(db), tokenCounter: createTokenCounter(), logger: silentLogger() });
    db.close();
    const show = await run('show', r.templateId ?? '', '--state', state);
    expect(show).toContain('\nrecoveries:\n');
    expect(show).not.toContain('recoverys');
    expect(show).toMatch(/\nexamples:\n/);
    expect(show).toMatch(/ repo claude-code-log /);
    expect(show).not.toContain('Request interrupted');
    expect(show).toMatch(/\ntask: fix the failing parser test/);
    expect(show).not.toMatch(/\nsystem: /);
  });
});
