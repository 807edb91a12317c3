import { existsSync } from 'node:fs';
import { defaultStateDir, dbPathIn } from '../daemon/paths.js';
import { openDb, type Db } from '../store/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';

/** Open the state database of `--state DIR` (default per design §1) for a CLI reader. */
export function openStateForCli(stateDir: string | undefined, { create = false } = {}): Db {
  const dir = stateDir ?? defaultStateDir();
  const path = dbPathIn(dir);
  if (!create && !existsSync(path)) {
    throw new ContextdError(ErrorCode.STORE_FAILED, `no contextd state at ${path}: has the daemon run with --state ${dir}?`, { path });
  }
  return openDb(path);
}
