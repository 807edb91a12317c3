import { homedir } from 'node:os';
import { defaultSocketPath as ipcDefaultSocketPath } from '../ipc/paths.js';
import { resolveStateDir } from '../store/paths.js';
import { join } from 'node:path';
import { existsSync } from 'node:fs';

type Env = Readonly<Record<string, string | undefined>>;

/** Where the state (SQLite) lives when no --state is given (see store/paths.ts). */
export function defaultStateDir(env: Env = process.env): string {
  return resolveStateDir(undefined, env);
}

/**
 * The socket path: systemd's `$RUNTIME_DIRECTORY/contextd.sock` under RuntimeDirectory=,
 * else the IPC default (`$XDG_RUNTIME_DIR/contextd.sock`, else a private per-user temp dir).
 */
export function defaultSocketPath(env: Env = process.env): string {
  const fromSystemd = env['RUNTIME_DIRECTORY']?.split(':')[0];
  if (fromSystemd) return join(fromSystemd, 'contextd.sock');
  return ipcDefaultSocketPath(env);
}

/** The agents' session folders watched by default, those that exist. */
export function defaultWatchDirs(env: Env = process.env): string[] {
  const home = env['HOME'] ?? homedir();
  const codexHome = env['CODEX_HOME'] ?? join(home, '.codex');
  return [join(home, '.claude', 'projects'), join(codexHome, 'sessions'), join(home, '.hermes', 'sessions')].filter((d) => existsSync(d));
}
