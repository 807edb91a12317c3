import { spawn, type SpawnOptions } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNotifier, watchdogIntervalFromEnv, type SpawnFn } from '../../src/daemon/sdnotify.js';
import { createLogger, type Logger } from '../../src/util/logger.js';
import { startNotifySocket, type NotifySocket } from '../systemd/notify-socket.js';

const dirs: string[] = [];
const sockets: NotifySocket[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'contextd-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const s of sockets.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface LogLine {
  level: string;
  msg: string;
  component?: string;
  [k: string]: unknown;
}
function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) } });
  return { logger, lines };
}

function script(dir: string, name: string, body: string): string {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
  return p;
}

const PATH = process.env['PATH'] ?? '/usr/bin:/bin';
const isPayload = (d: string[]): boolean => !(d.length === 1 && d[0] === 'BARRIER=1');

describe('createNotifier without NOTIFY_SOCKET', () => {
  it('is disabled, never spawns, and reports no watchdog even if WATCHDOG_USEC is set', async () => {
    let spawned = 0;
    const countingSpawn: SpawnFn = (cmd, args, opts) => {
      spawned++;
      return spawn(cmd, args, opts);
    };
    const n = createNotifier({ env: { WATCHDOG_USEC: '30000000' }, spawn: countingSpawn });
    expect(n.enabled).toBe(false);
    expect(n.watchdogIntervalMs).toBeUndefined();
    await n.ready('up');
    await n.watchdog();
    await n.status('x');
    await n.stopping();
    await n.extendTimeout(1000);
    await n.reloading();
    expect(spawned).toBe(0);
  });

  it('treats an empty NOTIFY_SOCKET as unset', () => {
    expect(createNotifier({ env: { NOTIFY_SOCKET: '' } }).enabled).toBe(false);
  });
});

describe('watchdogIntervalFromEnv', () => {
  it('is half of WATCHDOG_USEC in ms when WATCHDOG_PID is absent or ours', () => {
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '30000000' }, 42)).toBe(15_000);
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' }, 42)).toBe(15_000);
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '1500' }, 42)).toBe(1);
  });

  it('is undefined for another pid, a missing, zero or malformed value', () => {
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '43' }, 42)).toBeUndefined();
    expect(watchdogIntervalFromEnv({}, 42)).toBeUndefined();
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '0' }, 42)).toBeUndefined();
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '30s' }, 42)).toBeUndefined();
    expect(watchdogIntervalFromEnv({ WATCHDOG_USEC: '-5' }, 42)).toBeUndefined();
  });

  it('is exposed by an enabled notifier', () => {
    const n = createNotifier({ env: { NOTIFY_SOCKET: '/nonexistent', WATCHDOG_USEC: '20000000' }, pid: 7 });
    expect(n.enabled).toBe(true);
    expect(n.watchdogIntervalMs).toBe(10_000);
  });
});

describe('createNotifier with a real notify socket and the real systemd-notify', () => {
  it('delivers READY=1 (with MAINPID and STATUS), WATCHDOG=1, STATUS and STOPPING=1, in call order', async () => {
    const sock = await startNotifySocket(tempDir());
    sockets.push(sock);
    const { logger, lines } = captureLogger();
    const n = createNotifier({ env: { NOTIFY_SOCKET: sock.path, PATH }, logger });
    expect(n.enabled).toBe(true);

    await n.ready('watching 2 path(s)\nsocket fd 3');
    await sock.waitFor((d) => d.includes('READY=1'));
    // Fired without awaiting in between: the notifier must keep them in order.
    await Promise.all([n.watchdog(), n.status('3 sessions'), n.reloading('config'), n.extendTimeout(20_000), n.stopping('bye')]);
    await sock.waitFor((d) => d.includes('STOPPING=1'));

    const payloads = sock.datagrams.filter(isPayload);
    expect(payloads).toEqual([
      ['READY=1', `MAINPID=${process.pid}`, 'STATUS=watching 2 path(s) socket fd 3'],
      ['WATCHDOG=1'],
      ['STATUS=3 sessions'],
      ['RELOADING=1', 'STATUS=config'],
      ['EXTEND_TIMEOUT_USEC=20000000'],
      ['STOPPING=1', 'STATUS=bye'],
    ]);
    // systemd-notify waits on a barrier, so the manager has read each message before it exits.
    expect(sock.datagrams.filter((d) => !isPayload(d))).toHaveLength(6);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('reaches an abstract-namespace socket given as @name', async () => {
    const sock = await startNotifySocket(tempDir(), { abstract: true });
    sockets.push(sock);
    expect(sock.path.startsWith('@')).toBe(true);
    const n = createNotifier({ env: { NOTIFY_SOCKET: sock.path, PATH } });
    await n.watchdog();
    expect(await sock.waitFor((d) => d.includes('WATCHDOG=1'))).toEqual(['WATCHDOG=1']);
  });

  it('warns, and does not throw, when nobody listens on the notify socket', async () => {
    const sock = await startNotifySocket(tempDir());
    sockets.push(sock);
    const { logger, lines } = captureLogger();
    const n = createNotifier({ env: { NOTIFY_SOCKET: `@contextd-test-${process.pid}-${Date.now()}`, PATH }, logger });
    await n.watchdog();
    const warn = lines.find((l) => l.level === 'warn');
    expect(warn?.msg).toBe('sd_notify: systemd-notify failed');
    expect(warn?.['exitCode']).not.toBe(0);
    expect(warn?.['component']).toBe('sdnotify');
    expect(sock.datagrams).toEqual([]);
  });
});

describe('createNotifier never throws', () => {
  it('warns once when systemd-notify is missing, then stops trying', async () => {
    const { logger, lines } = captureLogger();
    let spawned = 0;
    const countingSpawn: SpawnFn = (cmd, args, opts: SpawnOptions) => {
      spawned++;
      return spawn(cmd, args, opts);
    };
    const n = createNotifier({ env: { NOTIFY_SOCKET: '/run/x/notify', PATH }, command: '/nonexistent/systemd-notify', spawn: countingSpawn, logger });
    await expect(n.ready()).resolves.toBeUndefined();
    await expect(n.watchdog()).resolves.toBeUndefined();
    expect(spawned).toBe(1);
    const warns = lines.filter((l) => l.level === 'warn');
    expect(warns).toHaveLength(1);
    expect(warns[0]?.msg).toMatch(/not found on PATH/);
  });

  it('warns with the exit code and stderr when systemd-notify fails', async () => {
    const dir = tempDir();
    const { logger, lines } = captureLogger();
    const fake = script(dir, 'fake-notify', 'echo "Failed to notify init system: Connection refused" >&2\nexit 3');
    const n = createNotifier({ env: { NOTIFY_SOCKET: join(dir, 'none.sock'), PATH }, command: fake, logger });
    await n.stopping();
    const warn = lines.find((l) => l.level === 'warn');
    expect(warn).toMatchObject({ msg: 'sd_notify: systemd-notify failed', exitCode: 3, stderr: 'Failed to notify init system: Connection refused', message: ['STOPPING=1'] });
  });

  it('kills a notification that hangs and resolves anyway', async () => {
    const dir = tempDir();
    const { logger, lines } = captureLogger();
    const hang = script(dir, 'hang-notify', 'exec sleep 60');
    const n = createNotifier({ env: { NOTIFY_SOCKET: join(dir, 'none.sock'), PATH }, command: hang, timeoutMs: 200, logger });
    await n.watchdog();
    const warn = lines.find((l) => l.level === 'warn');
    expect(warn?.msg).toMatch(/did not finish in time/);
    // The next call still runs (the queue is not stuck behind the killed child).
    await n.status('after');
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(2);
  });

  it('passes only PATH and NOTIFY_SOCKET to the child, the message as arguments', async () => {
    const seen: { args: readonly string[]; env: unknown }[] = [];
    const recording: SpawnFn = (_cmd, args, opts) => {
      seen.push({ args, env: opts.env });
      return spawn('true', [], opts);
    };
    const n = createNotifier({ env: { NOTIFY_SOCKET: '/run/user/1000/systemd/notify', PATH, SECRET_TOKEN: 'x' }, pid: 4242, spawn: recording });
    await n.ready('ok');
    expect(seen).toEqual([{ args: ['READY=1', 'MAINPID=4242', 'STATUS=ok'], env: { PATH, NOTIFY_SOCKET: '/run/user/1000/systemd/notify' } }]);
  });
});
