import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import ts from 'typescript';
import { afterEach, describe, expect, it } from 'vitest';
import { LISTEN_FDS_START, listenFdsFromEnv, parseListenFds, pickListenFd, type ListenFdsProblem } from '../../src/daemon/activation.js';

const dirs: string[] = [];
const procs: ChildProcess[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'contextd-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.exitCode === null && p.signalCode === null) {
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await gone;
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('parseListenFds / listenFdsFromEnv', () => {
  it('returns fds from 3 with their names when LISTEN_PID is ours', () => {
    const env: Record<string, string | undefined> = { LISTEN_PID: '100', LISTEN_FDS: '2', LISTEN_FDNAMES: 'contextd:ctl', OTHER: 'kept' };
    expect(listenFdsFromEnv(env, 100)).toEqual({ fds: [3, 4], names: ['contextd', 'ctl'] });
    expect(env).toEqual({ OTHER: 'kept' });
  });

  it('names every fd "unknown" when LISTEN_FDNAMES is absent', () => {
    expect(listenFdsFromEnv({ LISTEN_PID: '7', LISTEN_FDS: '1' }, 7)).toEqual({ fds: [3], names: ['unknown'] });
  });

  it('keeps the sockets but reports a LISTEN_FDNAMES of the wrong length', () => {
    const problems: ListenFdsProblem[] = [];
    const got = listenFdsFromEnv({ LISTEN_PID: '7', LISTEN_FDS: '2', LISTEN_FDNAMES: 'only-one' }, 7, { onProblem: (p) => problems.push(p) });
    expect(got).toEqual({ fds: [3, 4], names: ['unknown', 'unknown'] });
    expect(problems).toEqual([{ kind: 'malformed', variable: 'LISTEN_FDNAMES', value: 'only-one' }]);
  });

  it('ignores sockets meant for another process, and still clears the variables', () => {
    const problems: ListenFdsProblem[] = [];
    const env: Record<string, string | undefined> = { LISTEN_PID: '101', LISTEN_FDS: '1' };
    expect(listenFdsFromEnv(env, 100, { onProblem: (p) => problems.push(p) })).toBeUndefined();
    expect(problems).toEqual([{ kind: 'other-pid', listenPid: 101 }]);
    expect(env).toEqual({});
  });

  it('returns undefined, quietly, when not socket-activated or given zero fds', () => {
    const problems: ListenFdsProblem[] = [];
    const onProblem = (p: ListenFdsProblem): void => void problems.push(p);
    expect(listenFdsFromEnv({}, 1, { onProblem })).toBeUndefined();
    expect(listenFdsFromEnv({ LISTEN_FDS: '1' }, 1, { onProblem })).toBeUndefined();
    expect(listenFdsFromEnv({ LISTEN_PID: '1', LISTEN_FDS: '0' }, 1, { onProblem })).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it.each([
    [{ LISTEN_PID: 'abc', LISTEN_FDS: '1' }, 'LISTEN_PID'],
    [{ LISTEN_PID: '0', LISTEN_FDS: '1' }, 'LISTEN_PID'],
    [{ LISTEN_PID: '', LISTEN_FDS: '1' }, 'LISTEN_PID'],
    [{ LISTEN_PID: '5', LISTEN_FDS: '-1' }, 'LISTEN_FDS'],
    [{ LISTEN_PID: '5', LISTEN_FDS: '1x' }, 'LISTEN_FDS'],
    [{ LISTEN_PID: '5', LISTEN_FDS: '99999' }, 'LISTEN_FDS'],
  ])('rejects malformed %j', (env, variable) => {
    const r = parseListenFds(env, 5);
    expect(r.ok).toBe(false);
    expect(r.problem).toMatchObject({ kind: 'malformed', variable });
  });

  it('leaves the environment alone with unset: false', () => {
    const env = { LISTEN_PID: '9', LISTEN_FDS: '1', LISTEN_FDNAMES: 'contextd' };
    expect(listenFdsFromEnv(env, 9, { unset: false })?.fds).toEqual([3]);
    expect(env).toEqual({ LISTEN_PID: '9', LISTEN_FDS: '1', LISTEN_FDNAMES: 'contextd' });
  });

  it('round-trips any count and names (property)', () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_.-]{1,16}$/);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 22 }), fc.array(name, { minLength: 1, maxLength: 40 }), (pid, names) => {
        const env: Record<string, string | undefined> = { LISTEN_PID: String(pid), LISTEN_FDS: String(names.length), LISTEN_FDNAMES: names.join(':') };
        const got = listenFdsFromEnv(env, pid);
        expect(got?.names).toEqual(names);
        expect(got?.fds).toEqual(names.map((_, i) => LISTEN_FDS_START + i));
        expect(Object.keys(env)).toEqual([]);
      }),
    );
  });

  it('pickListenFd finds a socket by name, else takes the only one', () => {
    expect(pickListenFd({ fds: [3, 4], names: ['ctl', 'contextd'] }, 'contextd')).toBe(4);
    expect(pickListenFd({ fds: [3], names: ['unknown'] }, 'contextd')).toBe(3);
    expect(pickListenFd({ fds: [3, 4], names: ['a', 'b'] }, 'contextd')).toBeUndefined();
  });
});

/**
 * A real handover: `systemd-socket-activate` (package "systemd") binds the sockets, sets
 * LISTEN_PID to the pid it execs into, and starts a Node child that uses activation.ts
 * (transpiled on the fly) to find its fd, serve one connection, and report what it saw.
 */
describe('real socket activation via systemd-socket-activate', () => {
  const CHILD = `
import net from 'node:net';
import { listenFdsFromEnv, pickListenFd } from './activation.mjs';
const before = process.env.LISTEN_PID;
const got = listenFdsFromEnv(process.env, process.pid);
const left = ['LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'].filter((k) => k in process.env);
const fd = got && pickListenFd(got, process.argv[2]);
const server = net.createServer((c) => {
  c.end(JSON.stringify({ got, fd, left, listenPidWasOurs: before === String(process.pid) }) + '\\n');
  server.close();
});
server.listen({ fd });
`;

  function prepareChild(dir: string): string {
    const src = readFileSync(fileURLToPath(new URL('../../src/daemon/activation.ts', import.meta.url)), 'utf8');
    const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    writeFileSync(join(dir, 'activation.mjs'), js);
    writeFileSync(join(dir, 'child.mjs'), CHILD);
    return join(dir, 'child.mjs');
  }

  async function activate(args: string[], child: string, want: string): Promise<ChildProcess> {
    const proc = spawn('systemd-socket-activate', [...args, process.execPath, child, want], { stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(proc);
    let stderr = '';
    proc.stderr.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`systemd-socket-activate did not start listening: ${stderr}`)), 10_000);
      const listening = (): number => (stderr.match(/Listening on /g) ?? []).length;
      const expected = args.filter((a) => a.startsWith('--listen=')).length;
      proc.once('error', (e) => {
        clearTimeout(timer);
        reject(new Error(`cannot run systemd-socket-activate (package "systemd"): ${e.message}`));
      });
      proc.stderr.on('data', (c: string) => {
        stderr += c;
        if (listening() >= expected) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    return proc;
  }

  function ask(path: string): Promise<{ got: { fds: number[]; names: string[] }; fd: number; left: string[]; listenPidWasOurs: boolean }> {
    return new Promise((resolve, reject) => {
      let data = '';
      const c = createConnection(path);
      const timer = setTimeout(() => {
        c.destroy();
        reject(new Error(`no answer on ${path}: ${data}`));
      }, 10_000);
      c.setEncoding('utf8');
      c.on('data', (d: string) => (data += d));
      c.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      c.on('end', () => {
        clearTimeout(timer);
        resolve(JSON.parse(data) as never);
      });
    });
  }

  function exitOf(proc: ChildProcess): Promise<number | null> {
    if (proc.exitCode !== null) return Promise.resolve(proc.exitCode);
    return new Promise((r) => proc.once('exit', (code) => r(code)));
  }

  it('the child finds its socket as fd 3 named "contextd", serves on it and clears LISTEN_*', async () => {
    const dir = tempDir();
    const child = prepareChild(dir);
    const sock = join(dir, 'contextd.sock');
    const proc = await activate([`--listen=${sock}`, '--fdname=contextd'], child, 'contextd');
    const answer = await ask(sock);
    expect(answer).toEqual({ got: { fds: [3], names: ['contextd'] }, fd: 3, left: [], listenPidWasOurs: true });
    expect(await exitOf(proc)).toBe(0);
  });

  it('with two sockets, picks the one named for it (fd 4)', async () => {
    const dir = tempDir();
    const child = prepareChild(dir);
    const ctl = join(dir, 'ctl.sock');
    const main = join(dir, 'contextd.sock');
    const proc = await activate([`--listen=${ctl}`, `--listen=${main}`, '--fdname=ctl:contextd'], child, 'contextd');
    const answer = await ask(main);
    expect(answer.got).toEqual({ fds: [3, 4], names: ['ctl', 'contextd'] });
    expect(answer.fd).toBe(4);
    expect(await exitOf(proc)).toBe(0);
  });
});
