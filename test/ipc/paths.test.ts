import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { candidateSocketPaths, checkSocketPathLength, defaultSocketPath, findSocketPath, resolveGroupId } from '../../src/ipc/paths.js';
import { isContextdError } from '../../src/util/errors.js';
import { Resources } from './helpers.js';

const res = new Resources();
afterEach(() => res.closeAll());
const uid = process.getuid?.() ?? 0;

describe('socket paths', () => {
  it('prefers $XDG_RUNTIME_DIR', () => {
    expect(defaultSocketPath({ XDG_RUNTIME_DIR: '/run/user/1000' })).toBe('/run/user/1000/contextd.sock');
  });

  it('falls back to a private per-user temp dir created 0700', () => {
    const tmp = res.tmpDir();
    const p = defaultSocketPath({}, { tmpdir: tmp });
    expect(p).toBe(path.join(tmp, `contextd-${uid}`, 'contextd.sock'));
    const st = fs.statSync(path.dirname(p));
    expect(st.mode & 0o777).toBe(0o700);
    // Idempotent.
    expect(defaultSocketPath({ XDG_RUNTIME_DIR: '' }, { tmpdir: tmp })).toBe(p);
  });

  it('refuses a fallback dir that others can write', () => {
    const tmp = res.tmpDir();
    const dir = path.join(tmp, `contextd-${uid}`);
    fs.mkdirSync(dir, { mode: 0o777 });
    fs.chmodSync(dir, 0o777);
    let err: unknown;
    try {
      defaultSocketPath({}, { tmpdir: tmp });
    } catch (e) {
      err = e;
    }
    expect(isContextdError(err, 'CONFIG_INVALID')).toBe(true);
    expect((err as Error).message).toContain('0700');
  });

  it('lists candidates for clients and finds the one that exists', () => {
    const tmp = res.tmpDir();
    const env = { XDG_RUNTIME_DIR: tmp };
    const c = candidateSocketPaths(env, { tmpdir: '/nonexistent' });
    expect(c).toEqual([path.join(tmp, 'contextd.sock'), path.join(tmp, 'contextd', 'contextd.sock'), `/nonexistent/contextd-${uid}/contextd.sock`]);
    expect(findSocketPath(env, { tmpdir: '/nonexistent' })).toBe(c[0]);
    fs.mkdirSync(path.join(tmp, 'contextd'));
    fs.writeFileSync(path.join(tmp, 'contextd', 'contextd.sock'), '');
    expect(findSocketPath(env, { tmpdir: '/nonexistent' })).toBe(c[1]);
    expect(candidateSocketPaths({ ...env, CONTEXTD_SOCKET: '/x/y.sock' })[0]).toBe('/x/y.sock');
  });

  it('checks the 107-byte limit in bytes, not characters', () => {
    expect(() => checkSocketPathLength('/' + 'a'.repeat(106))).not.toThrow();
    expect(() => checkSocketPathLength('/' + 'a'.repeat(107))).toThrow(/108 bytes/);
    // 54 two-byte characters: 54 chars but 109 bytes.
    expect(() => checkSocketPathLength('/' + 'é'.repeat(54))).toThrow(/SOCKET_PATH_TOO_LONG|107-byte/);
  });

  it('resolves groups by gid or name', () => {
    const tmp = res.tmpDir();
    const file = path.join(tmp, 'group');
    fs.writeFileSync(file, 'root:x:0:\nagents:x:1234:ana,bo\n');
    expect(resolveGroupId(42, file)).toBe(42);
    expect(resolveGroupId('77', file)).toBe(77);
    expect(resolveGroupId('agents', file)).toBe(1234);
    expect(() => resolveGroupId('nobody-here', file)).toThrow(/unknown group "nobody-here"/);
  });
});
