/**
 * Tailer options: all optional except `paths`, validated once, defaults applied, frozen.
 */
import { defaultMaxOpenFiles } from '../util/open-files.js';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { TRANSCRIPT_FORMATS, type TranscriptFormat } from './types.js';
import { DEFAULT_MAX_LINE_BYTES } from './decoder.js';

export interface TailerOptions {
  /** Directories (watched recursively for `*.jsonl`) and/or single files. */
  readonly paths: readonly string[];
  /** Largest line parsed, in bytes (default 8 MiB); longer lines are skipped and counted. */
  readonly maxLineBytes?: number | undefined;
  /** Fixed formats by path prefix (the longest matching prefix wins); others are detected. */
  readonly formatOverrides?: Readonly<Record<string, TranscriptFormat>> | undefined;
  /** Delay of the one re-check read after each change (default 55 ms, just past chokidar's change throttle). */
  readonly recheckMs?: number | undefined;
  /** Files last modified longer ago than this at start are registered but not read until they change (default 30 min). */
  readonly liveWindowMs?: number | undefined;
  /** Bytes read per read call (default 1 MiB). */
  readonly readChunkBytes?: number | undefined;
  /** Follow symlinks that lead out of the watch roots (default false: such links are skipped with a warning). */
  readonly followSymlinks?: boolean | undefined;
  /** Transcript descriptors open at once (default `defaultMaxOpenFiles`: a quarter of the open-file limit, 64 to 1024; the least recently read are closed first). */
  readonly maxOpenFiles?: number | undefined;
  /** First retry delay for a file that cannot be opened (EACCES); doubles up to 60 s (default 1000 ms). */
  readonly unreadableRetryMs?: number | undefined;
  /** Window of the per-file warning rate limit (default 60 s). */
  readonly warnIntervalMs?: number | undefined;
  readonly logger?: Logger | undefined;
  /** Clock for the live window (default Date.now). */
  readonly now?: (() => number) | undefined;
  /**
   * Backpressure: asked before each read of `file`; while the promise it returns is pending, no
   * more of it is read (the consumer has a backlog: its offset stays, so nothing is lost, and the
   * bytes appended meanwhile are read in one go). Undefined means read on.
   */
  readonly gate?: ((file: string) => Promise<void> | undefined) | undefined;
}

export interface ResolvedTailerOptions {
  readonly paths: readonly string[];
  readonly maxLineBytes: number;
  readonly formatOverrides: readonly (readonly [prefix: string, format: TranscriptFormat])[];
  readonly recheckMs: number;
  readonly liveWindowMs: number;
  readonly readChunkBytes: number;
  readonly followSymlinks: boolean;
  readonly maxOpenFiles: number;
  readonly unreadableRetryMs: number;
  readonly warnIntervalMs: number;
  readonly logger: Logger;
  readonly now: () => number;
  readonly gate: ((file: string) => Promise<void> | undefined) | undefined;
}

const schema = z
  .object({
    paths: z.array(z.string().min(1)).min(1),
    maxLineBytes: z.number().int().positive().optional(),
    formatOverrides: z.record(z.string().min(1), z.enum(TRANSCRIPT_FORMATS)).optional(),
    recheckMs: z.number().int().nonnegative().optional(),
    liveWindowMs: z.number().nonnegative().optional(),
    readChunkBytes: z.number().int().min(4096).optional(),
    followSymlinks: z.boolean().optional(),
    maxOpenFiles: z.number().int().min(1).optional(),
    unreadableRetryMs: z.number().int().positive().optional(),
    warnIntervalMs: z.number().int().positive().optional(),
    logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null && typeof (v as { child?: unknown }).child === 'function').optional(),
    now: z.custom<() => number>((v) => typeof v === 'function').optional(),
    gate: z.custom<(file: string) => Promise<void> | undefined>((v) => typeof v === 'function').optional(),
  })
  .strict();

/** Validate and freeze tailer options; throws CONFIG_INVALID naming the bad field. */
export function resolveTailerOptions(options: TailerOptions): ResolvedTailerOptions {
  const parsed = schema.safeParse(options);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(options)'}: ${i.message}`).join('; ');
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `invalid tailer options: ${detail}`);
  }
  const o = parsed.data;
  const overrides = Object.entries(o.formatOverrides ?? {})
    .map(([prefix, format]) => Object.freeze([resolve(prefix), format] as const))
    .sort((a, b) => b[0].length - a[0].length);
  return Object.freeze({
    paths: Object.freeze(o.paths.map((p) => resolve(p))),
    maxLineBytes: o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
    formatOverrides: Object.freeze(overrides),
    // Just past chokidar's fixed 50 ms `change` throttle: an append it swallowed is read then.
    recheckMs: o.recheckMs ?? 55,
    liveWindowMs: o.liveWindowMs ?? 30 * 60 * 1000,
    readChunkBytes: o.readChunkBytes ?? 1024 * 1024,
    followSymlinks: o.followSymlinks ?? false,
    maxOpenFiles: o.maxOpenFiles ?? defaultMaxOpenFiles(),
    unreadableRetryMs: o.unreadableRetryMs ?? 1000,
    warnIntervalMs: o.warnIntervalMs ?? 60_000,
    logger: (o.logger ?? silentLogger()).child({ component: 'tailer' }),
    now: o.now ?? Date.now,
    gate: o.gate,
  });
}

/** The override format for a file, if a configured prefix matches it. */
export function overrideFor(options: ResolvedTailerOptions, file: string): TranscriptFormat | undefined {
  for (const [prefix, format] of options.formatOverrides) if (file.startsWith(prefix)) return format;
  return undefined;
}
