import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * The temp file beside `path`: same folder (so the rename stays on one file system), a name no
 * one else can guess, so another user of a shared folder cannot plant a file or symlink there.
 */
function tempPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(8).toString('hex')}.tmp`);
}

/**
 * Write `text` to `path` so readers see the old file or the new one, never half of one: a
 * temp file beside it, created exclusively ('wx': never an existing file, never through a
 * symlink) with exactly `mode` (default owner-only, whatever the umask), then renamed over
 * `path`, so the file has `mode` even when `path` existed. The temp file is removed on failure.
 */
export function writeFileAtomicSync(path: string, text: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = tempPath(path);
  const fd = openSync(tmp, 'wx', mode);
  try {
    try {
      fchmodSync(fd, mode);
      writeFileSync(fd, text);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** `writeFileAtomicSync` without blocking, and without creating the folder: it must exist. */
export async function writeFileAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const tmp = tempPath(path);
  const handle = await open(tmp, 'wx', mode);
  try {
    try {
      await handle.chmod(mode);
      await handle.writeFile(text);
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
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
