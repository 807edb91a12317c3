/**
 * Socket path rules (design §1, style 10): where the socket lives by default, Linux's
 * sun_path limit, and group lookup for shared sockets.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ContextdError, ErrorCode } from '../util/errors.js';

/** Linux `sun_path` is 108 bytes including the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** File name of the socket inside its directory. */
export const SOCKET_FILE_NAME = 'contextd.sock';

/** Throw SOCKET_PATH_TOO_LONG when `socketPath` does not fit in `sun_path`. */
export function checkSocketPathLength(socketPath: string): void {
  const bytes = Buffer.byteLength(socketPath, 'utf8');
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new ContextdError(
      ErrorCode.SOCKET_PATH_TOO_LONG,
      `socket path is ${bytes} bytes, over Linux's ${MAX_SOCKET_PATH_BYTES}-byte limit: ${socketPath}; choose a shorter --socket path`,
      { socketPath, bytes, maxBytes: MAX_SOCKET_PATH_BYTES },
    );
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function currentUid(): number {
  return typeof process.getuid === 'function' ? process.getuid() : 0;
}

/** Per-user fallback directory when there is no `$XDG_RUNTIME_DIR`. */
export function fallbackSocketDir(tmpdir: string = os.tmpdir(), uid: number = currentUid()): string {
  return path.join(tmpdir, `contextd-${uid}`);
}

/**
 * Make sure the fallback directory exists with mode 0700 and belongs to us: a predictable name
 * in a shared /tmp must not be a directory someone else prepared.
 */
export function ensurePrivateDir(dir: string, uid: number = currentUid()): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.isSymbolicLink()) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `${dir} exists and is not a directory; remove it or pass --socket`, { dir });
  }
  if (st.uid !== uid || (st.mode & 0o077) !== 0) {
    throw new ContextdError(
      ErrorCode.CONFIG_INVALID,
      `${dir} must be owned by uid ${uid} with mode 0700 (it is uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)}); fix it or pass --socket`,
      { dir },
    );
  }
}

/**
 * The default socket path: `$XDG_RUNTIME_DIR/contextd.sock`, else
 * `${os.tmpdir()}/contextd-${uid}/contextd.sock` (the directory is created 0700).
 */
export function defaultSocketPath(env: Env = process.env, opts: { tmpdir?: string; uid?: number } = {}): string {
  const runtime = env['XDG_RUNTIME_DIR'];
  if (runtime !== undefined && runtime !== '') return path.join(runtime, SOCKET_FILE_NAME);
  const dir = fallbackSocketDir(opts.tmpdir ?? os.tmpdir(), opts.uid ?? currentUid());
  ensurePrivateDir(dir, opts.uid ?? currentUid());
  return path.join(dir, SOCKET_FILE_NAME);
}

/**
 * Where a client should look, in order: `$CONTEXTD_SOCKET`, the hand-run default
 * (`$XDG_RUNTIME_DIR/contextd.sock`), the systemd user unit's `$XDG_RUNTIME_DIR/contextd/contextd.sock`,
 * and the per-user temp dir. Does not create anything.
 */
export function candidateSocketPaths(env: Env = process.env, opts: { tmpdir?: string; uid?: number } = {}): string[] {
  const out: string[] = [];
  const explicit = env['CONTEXTD_SOCKET'];
  if (explicit !== undefined && explicit !== '') out.push(explicit);
  const runtime = env['XDG_RUNTIME_DIR'];
  if (runtime !== undefined && runtime !== '') {
    out.push(path.join(runtime, SOCKET_FILE_NAME), path.join(runtime, 'contextd', SOCKET_FILE_NAME));
  }
  out.push(path.join(fallbackSocketDir(opts.tmpdir ?? os.tmpdir(), opts.uid ?? currentUid()), SOCKET_FILE_NAME));
  return out;
}

/** The first candidate socket that exists, else the first candidate. */
export function findSocketPath(env: Env = process.env, opts: { tmpdir?: string; uid?: number } = {}): string {
  const candidates = candidateSocketPaths(env, opts);
  return candidates.find((p) => existsSync(p)) ?? (candidates[0] as string);
}

/**
 * Resolve a group given by id or name to a gid (reads /etc/group for names: Node has no
 * getgrnam). Throws CONFIG_INVALID for an unknown name.
 */
export function resolveGroupId(group: string | number, groupFile = '/etc/group'): number {
  if (typeof group === 'number') return group;
  if (/^\d+$/.test(group)) return Number(group);
  let text = '';
  try {
    text = readFileSync(groupFile, 'utf8');
  } catch {
    // fall through to the unknown-group error
  }
  for (const line of text.split('\n')) {
    const [name, , gid] = line.split(':');
    if (name === group && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw new ContextdError(ErrorCode.CONFIG_INVALID, `unknown group ${JSON.stringify(group)} for the socket; give a group name from ${groupFile} or a numeric gid`, {
    group,
  });
}
