/**
 * Local errors with stable string codes. These never cross the socket: the IPC layer
 * maps them to JSON-RPC errors (see src/ipc/errors.ts) without stack traces.
 */
export const ErrorCode = {
  CONFIG_INVALID: 'CONFIG_INVALID',
  USAGE: 'USAGE',
  TAIL_FILE_GONE: 'TAIL_FILE_GONE',
  TAIL_READ_FAILED: 'TAIL_READ_FAILED',
  LINE_TOO_LONG: 'LINE_TOO_LONG',
  FORMAT_UNKNOWN: 'FORMAT_UNKNOWN',
  NOTHING_READ: 'NOTHING_READ',
  STATE_LOCKED: 'STATE_LOCKED',
  STATE_INSECURE: 'STATE_INSECURE',
  STORE_FAILED: 'STORE_FAILED',
  STORE_FULL: 'STORE_FULL',
  /** Transcript lines read could not be applied to their session's model (it is rebuilt from the transcript). */
  INGEST_FAILED: 'INGEST_FAILED',
  SOCKET_IN_USE: 'SOCKET_IN_USE',
  SOCKET_PATH_TOO_LONG: 'SOCKET_PATH_TOO_LONG',
  UNKNOWN_SESSION: 'UNKNOWN_SESSION',
  UNKNOWN_HANDLE: 'UNKNOWN_HANDLE',
  UNKNOWN_TEMPLATE: 'UNKNOWN_TEMPLATE',
  FILE_UNREADABLE: 'FILE_UNREADABLE',
  /** A file read back to an offset is no longer the file that was read (replaced under its name). */
  FILE_REPLACED: 'FILE_REPLACED',
  PLAN_EXPIRED: 'PLAN_EXPIRED',
  /** A session fed over the socket (session.sync) would go over `memory.maxFedSessions`, and none can be released for it. */
  TOO_MANY_FED_SESSIONS: 'TOO_MANY_FED_SESSIONS',
  /** A session fed over the socket was released from memory: its agent's next session.sync rebuilds it. */
  FED_SESSION_RELEASED: 'FED_SESSION_RELEASED',
  BUDGET_UNREACHABLE: 'BUDGET_UNREACHABLE',
  SUMMARIZER_FAILED: 'SUMMARIZER_FAILED',
  LIFECYCLE: 'LIFECYCLE',
  DAEMON_UNREACHABLE: 'DAEMON_UNREACHABLE',
  HOOK_INPUT_INVALID: 'HOOK_INPUT_INVALID',
  SETTINGS_INVALID: 'SETTINGS_INVALID',
  FORK_FAILED: 'FORK_FAILED',
  WARM_SNAPSHOT_INVALID: 'WARM_SNAPSHOT_INVALID',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** An error raised inside contextd, carrying a stable code and optional structured details. */
export class ContextdError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ContextdError';
    this.code = code;
    this.details = details;
  }
}

/** True when `err` is a ContextdError, optionally with the given code. */
export function isContextdError(err: unknown, code?: ErrorCode): err is ContextdError {
  return err instanceof ContextdError && (code === undefined || err.code === code);
}

/** A short, single-line description of any thrown value, safe for logs. */
const FILE_ERRNO_WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or folder',
  EISDIR: 'it is a folder, not a file',
  ENOTDIR: 'a part of the path is not a folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EMFILE: 'too many open files',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the path is too long',
};

/** A file-system failure as one coded error that names the path and the real cause in words. */
export function fileError(path: string, err: unknown, doing = 'cannot read'): ContextdError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const reason = (code !== undefined ? FILE_ERRNO_WORDS[code] : undefined) ?? describeError(err);
  return new ContextdError(ErrorCode.FILE_UNREADABLE, `${doing} ${path}: ${reason}`, { path, ...(code !== undefined ? { errno: code } : {}) });
}

export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  // an error that crossed a worker boundary or a library's own error object: its message, else its fields
  if (typeof err === 'object' && err !== null) {
    const message = (err as { message?: unknown }).message;
    if (typeof message === 'string') return message;
    try {
      return JSON.stringify(err);
    } catch {
      return Object.prototype.toString.call(err);
    }
  }
  return String(err);
}
