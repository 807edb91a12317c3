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
  SOCKET_IN_USE: 'SOCKET_IN_USE',
  SOCKET_PATH_TOO_LONG: 'SOCKET_PATH_TOO_LONG',
  UNKNOWN_SESSION: 'UNKNOWN_SESSION',
  UNKNOWN_HANDLE: 'UNKNOWN_HANDLE',
  PLAN_EXPIRED: 'PLAN_EXPIRED',
  BUDGET_UNREACHABLE: 'BUDGET_UNREACHABLE',
  SUMMARIZER_FAILED: 'SUMMARIZER_FAILED',
  LIFECYCLE: 'LIFECYCLE',
  DAEMON_UNREACHABLE: 'DAEMON_UNREACHABLE',
  HOOK_INPUT_INVALID: 'HOOK_INPUT_INVALID',
  SETTINGS_INVALID: 'SETTINGS_INVALID',
  FORK_FAILED: 'FORK_FAILED',
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
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
