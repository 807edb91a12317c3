import { existsSync } from 'node:fs';
import { resolveStateDir, stateDbPath } from '../store/paths.js';
import { openDb, type Db } from '../store/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';

/** Open the state database of `--state DIR` (default per design §1) for a CLI reader. */
export function openStateForCli(stateDir: string | undefined, { create = false } = {}): Db {
  const dir = resolveStateDir(stateDir);
  const path = stateDbPath(dir);
  if (!create && !existsSync(path)) {
    throw new ContextdError(ErrorCode.STORE_FAILED, `no contextd state at ${path}: has the daemon run with --state ${dir}?`, { path });
  }
  return openDb(path);
}
