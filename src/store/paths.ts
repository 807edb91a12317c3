import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The state directory (design §1): `--state DIR` when given, else systemd's
 * `$STATE_DIRECTORY` (StateDirectory=), else `$XDG_STATE_HOME/contextd`, else
 * `~/.local/state/contextd`.
 */
export function resolveStateDir(flag?: string, env: Env = process.env): string {
  if (flag !== undefined && flag.length > 0) return resolve(flag);
  const fromSystemd = env['STATE_DIRECTORY']?.split(':')[0];
  if (fromSystemd) return fromSystemd;
  if (env['XDG_STATE_HOME']) return join(env['XDG_STATE_HOME'], 'contextd');
  return join(env['HOME'] ?? homedir(), '.local', 'state', 'contextd');
}

/** The SQLite file inside a state directory. */
export function stateDbPath(stateDir: string): string {
  return join(stateDir, 'contextd.db');
}
