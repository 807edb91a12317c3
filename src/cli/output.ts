import { ContextdError, ErrorCode } from '../util/errors.js';

/** Exit codes of every command (design §7). */
export const ExitCode = { OK: 0, RUNTIME: 1, USAGE: 2 } as const;

/**
 * `contextd inspect F | head -3`: once the reader has gone, further output has nowhere to go
 * and is not an error. End quietly with exit 0 instead of a Node stack trace (EPIPE). The
 * daemon installs its own handlers (a closed pipe must never stop it).
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(ExitCode.OK);
      throw err;
    });
  }
}

/** Print one JSON document on stdout (the `--json` contract). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Print human output on stdout. */
export function printLine(text = ''): void {
  process.stdout.write(`${text}\n`);
}

/** A usage error: exits 2 with the message on stderr. */
export function usageError(message: string): ContextdError {
  return new ContextdError(ErrorCode.USAGE, message);
}

/** Parse a positive integer flag, or throw a usage error naming the flag. */
export function parsePositiveInt(flag: string): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw usageError(`${flag} must be a positive integer, got "${value}"`);
    return n;
  };
}

/** Parse a ratio in [0, 1), or throw a usage error naming the flag. */
export function parseRatio(flag: string): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0 || n >= 1) throw usageError(`${flag} must be a number in [0, 1), got "${value}"`);
    return n;
  };
}

/** Format a 0–1 ratio as a percentage with one decimal. */
export function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}
