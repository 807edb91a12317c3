/**
 * Rate-limited warnings: the first occurrence of a key (say, a file and a kind of problem) is
 * logged at once; repeats within `intervalMs` are only counted, and one line at the end of the
 * window says how many there were. A flood of bad lines costs a few log lines, not thousands.
 */
import type { Logger } from './logger.js';

interface Window {
  readonly startedAt: number;
  suppressed: number;
  fields: Record<string, unknown>;
  msg: string;
  timer: NodeJS.Timeout | undefined;
}

export interface RateLimitedLogOptions {
  /** Length of a window per key (default 60 s). */
  readonly intervalMs?: number;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export class RateLimitedLog {
  private readonly windows = new Map<string, Window>();
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly log: Logger,
    options: RateLimitedLogOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Log a warning for `key`, or count it when one was logged for the key in this window. */
  warn(key: string, fields: Record<string, unknown>, msg: string): void {
    const w = this.windows.get(key);
    if (w) {
      w.suppressed++;
      w.fields = fields;
      w.msg = msg;
      return;
    }
    this.log.warn(fields, msg);
    const fresh: Window = { startedAt: this.now(), suppressed: 0, fields, msg, timer: undefined };
    fresh.timer = setTimeout(() => this.close(key), this.intervalMs);
    fresh.timer.unref();
    this.windows.set(key, fresh);
  }

  /** End every window now (shutdown): pending counts are logged. */
  flush(): void {
    for (const key of [...this.windows.keys()]) this.close(key);
  }

  /** Forget the windows of keys starting with `prefix` (a file went away), logging their counts. */
  forget(prefix: string): void {
    for (const key of [...this.windows.keys()]) if (key.startsWith(prefix)) this.close(key);
  }

  private close(key: string): void {
    const w = this.windows.get(key);
    if (!w) return;
    if (w.timer) clearTimeout(w.timer);
    this.windows.delete(key);
    if (w.suppressed > 0) this.log.warn({ ...w.fields, repeated: w.suppressed, windowMs: this.now() - w.startedAt }, `${w.msg} (repeated)`);
  }
}
