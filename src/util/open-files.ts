import { readFileSync } from 'node:fs';

/** The soft "Max open files" limit in a /proc/<pid>/limits text (undefined when it holds none). */
export function parseOpenFilesLimit(limits: string): number | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(limits);
  if (!m) return undefined;
  return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** This process's soft open-file limit (Linux: /proc/self/limits), or undefined where it cannot be read. */
export function openFilesLimit(): number | undefined {
  try {
    return parseOpenFilesLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
}

/** Fewest and most transcript descriptors kept open by default (`maxOpenFilesFor`). */
export const MIN_DEFAULT_OPEN_FILES = 64;
export const MAX_DEFAULT_OPEN_FILES = 1024;

/**
 * How many transcript descriptors the tailer keeps open by default under an open-file `limit`:
 * a quarter of it, between MIN_DEFAULT_OPEN_FILES and MAX_DEFAULT_OPEN_FILES (64 at
 * `ulimit -n 256`, the rest left to sockets, SQLite and the watcher; 1024 under the systemd
 * units' LimitNOFILE=65536); 64 when the limit is unknown. A live session whose descriptor was
 * closed is opened again at its next append, so a bound below the live sessions costs an open,
 * a stat and a close per append.
 */
export function maxOpenFilesFor(limit: number | undefined): number {
  if (limit === undefined) return MIN_DEFAULT_OPEN_FILES;
  return Math.min(MAX_DEFAULT_OPEN_FILES, Math.max(MIN_DEFAULT_OPEN_FILES, Math.floor(limit / 4)));
}

/** `maxOpenFilesFor` this process's limit. */
export function defaultMaxOpenFiles(): number {
  return maxOpenFilesFor(openFilesLimit());
}
