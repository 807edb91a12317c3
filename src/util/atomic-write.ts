import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Write `text` to `path` so readers see the old file or the new one, never half of one: a
 * temp file beside it (same folder, so the rename stays on one file system), then rename.
 * The file is created with `mode` (default owner-only); the temp file is removed on failure.
 */
export function writeFileAtomicSync(path: string, text: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text, { mode });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Write `text` to `path` in place, owner-only: created 0600, and an existing file's mode
 * tightened to 0600 before anything is written into it (as the state files are).
 */
export function writePrivateFileSync(path: string, text: string): void {
  const fd = openSync(path, 'w', 0o600);
  try {
    if ((fstatSync(fd).mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    writeFileSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
