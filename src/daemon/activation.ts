/**
 * Socket activation, as sd_listen_fds(3) and sd_listen_fds_with_names(3) define it:
 * systemd (or `systemd-socket-activate`) passes listening sockets as fds 3, 4, … and sets
 * LISTEN_PID (the pid meant to take them), LISTEN_FDS (how many) and LISTEN_FDNAMES
 * (colon-separated names from FileDescriptorName=). The variables are removed after reading,
 * so processes we spawn do not believe the fds are theirs.
 *
 * Self-contained on purpose (no imports): a test transpiles it alone into a child process.
 */

/** The first passed fd (SD_LISTEN_FDS_START). */
export const LISTEN_FDS_START = 3;

/** Sockets handed over by the service manager. */
export interface ListenFds {
  /** 3, 4, … — one per socket, in the order of the socket unit's Listen*= lines. */
  readonly fds: readonly number[];
  /** Same length as `fds`: FileDescriptorName= of each, or "unknown" when none were given. */
  readonly names: readonly string[];
}

/** Why the environment was not usable; `undefined` means there was nothing to read. */
export type ListenFdsProblem =
  | { readonly kind: 'other-pid'; readonly listenPid: number }
  | { readonly kind: 'malformed'; readonly variable: 'LISTEN_PID' | 'LISTEN_FDS' | 'LISTEN_FDNAMES'; readonly value: string };

/** Result of {@link parseListenFds}. */
export type ListenFdsParse =
  | { readonly ok: true; readonly value: ListenFds; readonly problem?: ListenFdsProblem }
  | { readonly ok: false; readonly problem: ListenFdsProblem | undefined };

export interface ListenFdsOptions {
  /** Remove LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES from `env` after reading (default true). */
  readonly unset?: boolean;
  /** Told about malformed variables (they are otherwise ignored, like sd_listen_fds's -EINVAL). */
  readonly onProblem?: (problem: ListenFdsProblem) => void;
}

type Env = Record<string, string | undefined>;

const VARIABLES = ['LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'] as const;
/** A sanity bound: far above any socket unit, far below fd exhaustion. */
const MAX_FDS = 4096;

function parseDecimal(text: string): number | undefined {
  if (!/^\d{1,10}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Pure parse of the activation variables for process `pid`; reads `env`, changes nothing. */
export function parseListenFds(env: Readonly<Env>, pid: number): ListenFdsParse {
  const pidText = env['LISTEN_PID'];
  const countText = env['LISTEN_FDS'];
  if (pidText === undefined || countText === undefined) return { ok: false, problem: undefined };
  const listenPid = parseDecimal(pidText);
  if (listenPid === undefined || listenPid === 0) {
    return { ok: false, problem: { kind: 'malformed', variable: 'LISTEN_PID', value: pidText } };
  }
  if (listenPid !== pid) return { ok: false, problem: { kind: 'other-pid', listenPid } };
  const count = parseDecimal(countText);
  if (count === undefined || count > MAX_FDS) {
    return { ok: false, problem: { kind: 'malformed', variable: 'LISTEN_FDS', value: countText } };
  }
  if (count === 0) return { ok: false, problem: undefined };
  const fds = Array.from({ length: count }, (_, i) => LISTEN_FDS_START + i);
  const namesText = env['LISTEN_FDNAMES'];
  const given = namesText?.split(':');
  // A name list of the wrong length is reported but does not cost us the sockets.
  const names = given !== undefined && given.length === count ? given : fds.map(() => 'unknown');
  const value: ListenFds = Object.freeze({ fds: Object.freeze(fds), names: Object.freeze(names) });
  if (namesText !== undefined && given?.length !== count) {
    return { ok: true, value, problem: { kind: 'malformed', variable: 'LISTEN_FDNAMES', value: namesText } };
  }
  return { ok: true, value };
}

/**
 * The listening sockets passed to process `pid`, or undefined when there are none for it
 * (variables absent, meant for another pid, or malformed — reported through `onProblem`;
 * a LISTEN_FDNAMES of the wrong length is reported too, and the fds come back named "unknown").
 * Unless `unset: false`, the three variables are deleted from `env` either way.
 */
export function listenFdsFromEnv(env: Env = process.env, pid: number = process.pid, options: ListenFdsOptions = {}): ListenFds | undefined {
  const parsed = parseListenFds(env, pid);
  if (options.unset !== false) for (const name of VARIABLES) delete env[name];
  if (parsed.problem !== undefined) options.onProblem?.(parsed.problem);
  return parsed.ok ? parsed.value : undefined;
}

/** The fd named `name` (FileDescriptorName=); else the only fd when exactly one was passed. */
export function pickListenFd(fds: ListenFds, name: string): number | undefined {
  const i = fds.names.indexOf(name);
  if (i >= 0) return fds.fds[i];
  return fds.fds.length === 1 ? fds.fds[0] : undefined;
}
