/**
 * sd_notify(3) for Node without a native addon.
 *
 * Node cannot open AF_UNIX datagram sockets, so each notification spawns the
 * `systemd-notify` tool (about 6 ms), which sends the datagram to `$NOTIFY_SOCKET` and then
 * waits on a `BARRIER=1` round trip, so the manager has read the message before the child
 * exits. Because the sender is a child process, the unit needs `NotifyAccess=all`.
 * Without `$NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
 * Nothing here throws: a missing or failing `systemd-notify` is logged as a warning.
 */
import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import type { Logger } from '../util/logger.js';

/** How a child process is started; `child_process.spawn` by default (injectable for tests). */
export type SpawnFn = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** Options of {@link createNotifier}; all optional. */
export interface NotifierOptions {
  /** Environment read for NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID and PATH (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Our pid, sent as MAINPID= with READY=1 and compared with WATCHDOG_PID (default `process.pid`). */
  readonly pid?: number;
  /** Process spawner (default `child_process.spawn`). */
  readonly spawn?: SpawnFn;
  /** The notify tool (default `systemd-notify`, looked up on PATH). */
  readonly command?: string;
  /**
   * A notification still running after this long is killed and reported (default 8000:
   * longer than systemd-notify's own 5 s barrier timeout, so its error is the one logged).
   */
  readonly timeoutMs?: number;
  readonly logger?: Logger;
}

/** The service-manager side of the daemon's lifecycle. */
export interface Notifier {
  /** True when `$NOTIFY_SOCKET` was set: calls spawn `systemd-notify`; otherwise they do nothing. */
  readonly enabled: boolean;
  /**
   * How often to call {@link Notifier.watchdog}: half of `$WATCHDOG_USEC`, when it is set and
   * `$WATCHDOG_PID` is absent or ours; otherwise undefined (no watchdog wanted).
   */
  readonly watchdogIntervalMs: number | undefined;
  /** READY=1 (with MAINPID= and an optional STATUS=). */
  ready(status?: string): Promise<void>;
  /** STOPPING=1 (with an optional STATUS=). */
  stopping(status?: string): Promise<void>;
  /** RELOADING=1 (with an optional STATUS=); send {@link Notifier.ready} when the reload is done. */
  reloading(status?: string): Promise<void>;
  /** WATCHDOG=1. */
  watchdog(): Promise<void>;
  /** STATUS=text, shown by `systemctl status`. */
  status(text: string): Promise<void>;
  /**
   * EXTEND_TIMEOUT_USEC: ask for `ms` more before TimeoutStartSec=/TimeoutStopSec= fire
   * (repeat it while a long initial scan or shutdown drain is still making progress).
   */
  extendTimeout(ms: number): Promise<void>;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const STDERR_CAP = 2048;

/** Half of WATCHDOG_USEC in ms when the watchdog is meant for `pid`, else undefined. */
export function watchdogIntervalFromEnv(env: Readonly<Record<string, string | undefined>>, pid: number): number | undefined {
  const usecText = env['WATCHDOG_USEC'];
  if (usecText === undefined || !/^\d+$/.test(usecText)) return undefined;
  const usec = Number(usecText);
  if (!Number.isSafeInteger(usec) || usec <= 0) return undefined;
  const pidText = env['WATCHDOG_PID'];
  if (pidText !== undefined && pidText !== '' && pidText !== String(pid)) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}

/** One line of a notify message: no newline may split the assignment. */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

/** Create the notifier from the environment. Never throws. */
export function createNotifier(options: NotifierOptions = {}): Notifier {
  const env = options.env ?? process.env;
  const pid = options.pid ?? process.pid;
  const spawn = options.spawn ?? (nodeSpawn as SpawnFn);
  const command = options.command ?? 'systemd-notify';
  const timeoutMs = options.timeoutMs ?? 8000;
  const log = options.logger?.child({ component: 'sdnotify' });
  const socket = env['NOTIFY_SOCKET'];
  const enabled = socket !== undefined && socket !== '';
  const watchdogIntervalMs = enabled ? watchdogIntervalFromEnv(env, pid) : undefined;
  const childEnv: Record<string, string> = { PATH: env['PATH'] ?? DEFAULT_PATH, NOTIFY_SOCKET: socket ?? '' };

  let missing = false;
  /** Notifications are sent one after another, so the manager sees them in call order. */
  let queue: Promise<void> = Promise.resolve();

  const sendNow = (assignments: readonly string[]): Promise<void> =>
    new Promise<void>((resolve) => {
      if (missing) {
        resolve();
        return;
      }
      let child: ChildProcess;
      try {
        child = spawn(command, assignments, { env: childEnv, stdio: ['ignore', 'ignore', 'pipe'] });
      } catch (err) {
        log?.warn({ err: err instanceof Error ? err.message : String(err), command, message: assignments }, 'sd_notify: cannot spawn systemd-notify');
        resolve();
        return;
      }
      let stderr = '';
      let settled = false;
      const finish = (): void => {
        settled = true;
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        if (settled) return;
        log?.warn({ command, message: assignments, timeoutMs }, 'sd_notify: systemd-notify did not finish in time; killed');
        child.kill('SIGKILL');
        finish();
      }, timeoutMs);
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        if (stderr.length < STDERR_CAP) stderr += chunk.slice(0, STDERR_CAP - stderr.length);
      });
      child.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        if (err.code === 'ENOENT') {
          missing = true;
          log?.warn({ command, message: assignments }, 'sd_notify: systemd-notify not found on PATH; notifications to systemd are disabled (install systemd, or the unit will time out / trip its watchdog)');
        } else {
          log?.warn({ err: err.message, code: err.code, command, message: assignments }, 'sd_notify: cannot run systemd-notify');
        }
        finish();
      });
      child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
        if (settled) return;
        if (code !== 0) {
          log?.warn({ command, message: assignments, exitCode: code, signal, stderr: stderr.trim() }, 'sd_notify: systemd-notify failed');
        } else {
          log?.debug({ message: assignments }, 'sd_notify sent');
        }
        finish();
      });
    });

  const send = (assignments: readonly string[]): Promise<void> => {
    if (!enabled) return Promise.resolve();
    const next = queue.then(() => sendNow(assignments));
    queue = next;
    return next;
  };

  const withStatus = (base: readonly string[], status: string | undefined): string[] =>
    status === undefined ? [...base] : [...base, `STATUS=${oneLine(status)}`];

  return Object.freeze({
    enabled,
    watchdogIntervalMs,
    ready: (status?: string) => send(withStatus(['READY=1', `MAINPID=${pid}`], status)),
    stopping: (status?: string) => send(withStatus(['STOPPING=1'], status)),
    reloading: (status?: string) => send(withStatus(['RELOADING=1'], status)),
    watchdog: () => send(['WATCHDOG=1']),
    status: (text: string) => send([`STATUS=${oneLine(text)}`]),
    extendTimeout: (ms: number) => send([`EXTEND_TIMEOUT_USEC=${Math.max(0, Math.round(ms * 1000))}`]),
  });
}
