import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS, loadConfigFile, resolveDaemonOptions } from '../../src/daemon/config.js';
import { defaultStateDir, defaultSocketPath } from '../../src/daemon/paths.js';
import { ContextdError, ErrorCode } from '../../src/util/errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function writeConfig(value: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-config-'));
  dirs.push(dir);
  const f = join(dir, 'c.json');
  writeFileSync(f, typeof value === 'string' ? value : JSON.stringify(value));
  return f;
}
function codeOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ContextdError);
    return { code: (err as ContextdError).code, message: (err as Error).message };
  }
  throw new Error('expected an error');
}

describe('daemon options', () => {
  const env = { HOME: '/home/u', XDG_RUNTIME_DIR: '/run/user/1000', XDG_STATE_HOME: '/home/u/.local/state' };

  it('applies defaults and freezes the result', () => {
    const o = resolveDaemonOptions({}, {}, env);
    expect(o).toMatchObject({ reserveRatio: DEFAULTS.reserveRatio, softWatermark: 0.6, hysteresis: 0.1, socketPath: '/run/user/1000/contextd.sock', stateDir: '/home/u/.local/state/contextd' });
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('lets flags override the file', () => {
    const o = resolveDaemonOptions({ reserveRatio: 0.2, budgetTokens: 1000 }, { reserveRatio: 0.3 }, env);
    expect(o.reserveRatio).toBe(0.3);
    expect(o.budgetTokens).toBe(1000);
  });

  it('names the bad field of a config file', () => {
    const f = writeConfig({ reserveRatio: 2 });
    const e = codeOf(() => loadConfigFile(f));
    expect(e.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(e.message).toContain('"reserveRatio"');
    expect(e.message).toContain(f);
  });

  it('rejects a misspelled key and malformed JSON', () => {
    expect(codeOf(() => loadConfigFile(writeConfig({ reserveRatoi: 0.2 }))).message).toMatch(/reserveRatoi/);
    expect(codeOf(() => loadConfigFile(writeConfig('{not json'))).code).toBe(ErrorCode.CONFIG_INVALID);
  });

  it('memory budget: defaults, 0 for no bound, bad values named', () => {
    expect(resolveDaemonOptions({}, {}, env).memory).toEqual({ maxSessionTokens: 5_000_000, releaseAfterMs: 60_000, idleReleaseMs: 300_000, maxFedSessions: 64 });
    expect(resolveDaemonOptions({ memory: { maxSessionTokens: 0, idleReleaseMs: 0, maxFedSessions: 0 } }, {}, env).memory).toEqual({ maxSessionTokens: 0, releaseAfterMs: 60_000, idleReleaseMs: 0, maxFedSessions: 0 });
    expect(codeOf(() => resolveDaemonOptions({ memory: { maxSessionTokens: -1 } }, {}, env)).message).toContain('"memory.maxSessionTokens"');
    expect(codeOf(() => resolveDaemonOptions({ memory: { maxFedSessions: 1.5 } }, {}, env)).message).toContain('"memory.maxFedSessions"');
    expect(codeOf(() => loadConfigFile(writeConfig({ memory: { releaseAfter: 5 } }))).code).toBe(ErrorCode.CONFIG_INVALID);
  });

  it('refuses a soft watermark inside the reserve', () => {
    expect(codeOf(() => resolveDaemonOptions({ softWatermark: 0.9 }, {}, env)).message).toMatch(/softWatermark/);
  });

  it('uses systemd directories when run as a unit', () => {
    expect(defaultStateDir({ STATE_DIRECTORY: '/var/lib/contextd/alice' })).toBe('/var/lib/contextd/alice');
    expect(defaultSocketPath({ RUNTIME_DIRECTORY: '/run/user/1000/contextd' })).toBe('/run/user/1000/contextd/contextd.sock');
  });
});
