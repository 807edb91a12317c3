import { homedir, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { existsSync } from 'node:fs';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Where the state (SQLite) lives: systemd's `$STATE_DIRECTORY` when run as a unit with
 * StateDirectory=, else `$XDG_STATE_HOME/contextd`, else `~/.local/state/contextd`.
 */
export function defaultStateDir(env: Env = process.env): string {
  const fromSystemd = env['STATE_DIRECTORY']?.split(':')[0];
  if (fromSystemd) return fromSystemd;
  if (env['XDG_STATE_HOME']) return join(env['XDG_STATE_HOME'], 'contextd');
  return join(env['HOME'] ?? homedir(), '.local', 'state', 'contextd');
}

/** The SQLite file inside a state directory. */
export function dbPathIn(stateDir: string): string {
  return join(stateDir, 'contextd.db');
}

/**
 * The socket path: systemd's `$RUNTIME_DIRECTORY/contextd.sock` under RuntimeDirectory=,
 * else `$XDG_RUNTIME_DIR/contextd.sock`, else a per-user directory in the temp dir.
 */
export function defaultSocketPath(env: Env = process.env): string {
  const fromSystemd = env['RUNTIME_DIRECTORY']?.split(':')[0];
  if (fromSystemd) return join(fromSystemd, 'contextd.sock');
  if (env['XDG_RUNTIME_DIR']) return join(env['XDG_RUNTIME_DIR'], 'contextd.sock');
  return join(tmpdir(), `contextd-${userInfo().uid}`, 'contextd.sock');
}

/** The agents' session folders watched by default, those that exist. */
export function defaultWatchDirs(env: Env = process.env): string[] {
  const home = env['HOME'] ?? homedir();
  const codexHome = env['CODEX_HOME'] ?? join(home, '.codex');
  return [join(home, '.claude', 'projects'), join(codexHome, 'sessions'), join(home, '.hermes', 'sessions')].filter((d) => existsSync(d));
}
