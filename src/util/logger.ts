import { pino, type Logger, type DestinationStream, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

export interface CreateLoggerOptions {
  /** pino level (default 'info'; env CONTEXTD_LOG_LEVEL overrides when set). */
  readonly level?: string;
  /** Where JSON lines go (default: stderr, so stdout stays free for command output). */
  readonly destination?: DestinationStream;
  /** Add a journald-style `PRIORITY` field (set when running under journald). */
  readonly journald?: boolean;
}

/** syslog priorities journald understands, by pino level number. */
const JOURNALD_PRIORITY: Record<number, number> = { 10: 7, 20: 7, 30: 6, 40: 4, 50: 3, 60: 2 };

/** Keys whose values never reach a log line. */
export const REDACTED_LOG_PATHS = [
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'token',
  '*.token',
  'password',
  '*.password',
];

/** The root logger. Modules take `logger.child({ component })`. */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const level = process.env['CONTEXTD_LOG_LEVEL'] ?? options.level ?? 'info';
  const pinoOptions: LoggerOptions = {
    level,
    base: { pid: process.pid },
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    formatters: options.journald
      ? { log: (obj) => obj, bindings: (b) => b, level: (label, number) => ({ level: label, PRIORITY: JOURNALD_PRIORITY[number] ?? 6 }) }
      : { level: (label) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(pinoOptions, options.destination ?? pino.destination({ fd: 2, sync: true }));
}

/** A logger that drops everything (tests and offline commands that log nothing). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
