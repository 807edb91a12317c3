import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installHooks, uninstallHooks, defaultSettingsPath } from '../../src/integrations/install.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'ctxd-install-'));
  dirs.push(d);
  return d;
}

const CMD = "/usr/bin/node /opt/contextd/bin/contextd.js hook claude-code --state '/s t'";
const userHook = { matcher: 'Bash', hooks: [{ type: 'command', command: 'echo mine', timeout: 3 }] };

describe('install / uninstall claude-code', () => {
  it('merges into existing settings, is idempotent, and uninstall removes exactly its hooks', () => {
    const d = tmp();
    const file = join(d, 'settings.json');
    const original = { model: 'opus', permissions: { allow: ['Bash'] }, hooks: { PostToolUse: [userHook], UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo prompt' }] }] } };
    writeFileSync(file, JSON.stringify(original));
    installHooks('claude-code', file, CMD, '/s t');
    const once = readFileSync(file, 'utf8');
    const r = installHooks('claude-code', file, CMD, '/s t');
    expect(readFileSync(file, 'utf8')).toBe(once);
    expect(r.removed).toBe(5);
    const doc = JSON.parse(once) as { model: string; hooks: Record<string, { matcher?: string; hooks: { command: string }[] }[]> };
    expect(doc.model).toBe('opus');
    expect(doc.hooks['PostToolUse']?.[0]).toEqual(userHook);
    expect(doc.hooks['SessionStart']).toEqual([{ matcher: 'compact', hooks: [{ type: 'command', command: CMD, timeout: 10 }] }]);
    expect(doc.hooks['UserPromptSubmit']?.map((g) => g.hooks[0]?.command)).toEqual(['echo prompt', CMD]);
    // The PostToolUse hook starts contextd only while something is pending.
    expect(doc.hooks['PostToolUse']?.[1]?.hooks[0]?.command).toContain("'/s t/hooks-pending'");
    const u = uninstallHooks('claude-code', file);
    expect(u.removed).toBe(5);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(original);
  });

  it('creates the file when missing and refuses to overwrite one it cannot parse', () => {
    const d = tmp();
    const file = join(d, 'nested', 'settings.json');
    installHooks('claude-code', file, CMD, d);
    expect(Object.keys((JSON.parse(readFileSync(file, 'utf8')) as { hooks: object }).hooks)).toEqual(['UserPromptSubmit', 'PostCompact', 'PostToolUse', 'SessionStart', 'SessionEnd']);
    const bad = join(d, 'bad.json');
    writeFileSync(bad, '{ not json');
    expect(() => installHooks('claude-code', bad, CMD, d)).toThrow(/not valid JSON.*nothing was changed/);
    expect(readFileSync(bad, 'utf8')).toBe('{ not json');
  });

  it('an upgrade replaces every earlier form of the hook command, and uninstall removes each', () => {
    const d = tmp();
    // Forms earlier versions wrote: the running script (the ESM CLI or the bin), quoted paths,
    // and the bare name when there was no script path; the current one unsets NODE_EXTRA_CA_CERTS.
    const older = [
      '/usr/bin/node /opt/contextd/dist/src/cli/main.js hook claude-code --socket /run/c.sock',
      "'/opt/my node/bin/node' '/home/u/my tools/contextd/bin/contextd.js' hook claude-code --state '/s t'",
      '/usr/bin/node contextd hook claude-code',
    ];
    const current = "env -u NODE_EXTRA_CA_CERTS /usr/bin/node /opt/contextd/bin/contextd.js hook claude-code --state '/s t'";
    for (const old of older) {
      const file = join(d, 'settings.json');
      writeFileSync(file, JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo mine' }] }] } }));
      installHooks('claude-code', file, old, '/s t');
      // A Codex hook in the same file is not Claude Code's: kept.
      installHooks('codex', file, old.replace('claude-code', 'codex'), '/s t');
      const r = installHooks('claude-code', file, current, '/s t');
      expect(r.removed).toBe(5);
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain(JSON.stringify(old).slice(1, -1));
      const doc = JSON.parse(text) as { hooks: Record<string, { hooks: { command: string }[] }[]> };
      expect(doc.hooks['UserPromptSubmit']?.map((g) => g.hooks[0]?.command)).toEqual(['echo mine', old.replace('claude-code', 'codex'), current]);
      expect(doc.hooks['PostToolUse']?.[0]?.hooks[0]?.command).toContain(`then exec ${current};`);
      installHooks('claude-code', file, old, '/s t');
      expect(uninstallHooks('claude-code', file).removed).toBe(5);
      expect(uninstallHooks('codex', file).removed).toBe(2);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo mine' }] }] } });
    }
  });

  it('finds each agent’s settings from HOME and CODEX_HOME', () => {
    expect(defaultSettingsPath('claude-code', { HOME: '/h' })).toBe('/h/.claude/settings.json');
    expect(defaultSettingsPath('codex', { HOME: '/h' })).toBe('/h/.codex/hooks.json');
    expect(defaultSettingsPath('codex', { HOME: '/h', CODEX_HOME: '/c' })).toBe('/c/hooks.json');
  });
});
