import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { closestName } from '../util/suggest.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { TRANSCRIPT_FORMATS } from '../ingest/types.js';
import { defaultSocketPath, defaultStateDir, defaultWatchDirs } from './paths.js';
import { MEMORY_DEFAULTS, type MemoryBudget } from './lifecycle.js';
import { proxyConfigSchema, resolveProxyOptions, type ProxyOptions } from '../proxy/index.js';
import { DEFAULT_SNAPSHOT_DELAY_MS } from '../warm/snapshot.js';

const summarizerSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('extractive') }).strict(),
  z
    .object({
      kind: z.literal('openai'),
      baseUrl: z.string().url(),
      model: z.string().min(1),
      apiKeyEnv: z.string().min(1).optional(),
      timeoutMs: z.number().int().positive().default(20_000),
      maxTokens: z.number().int().positive().default(400),
    })
    .strict(),
]);

/** The config file (every field optional) — also the shape CLI flags are merged into. */
export const configFileSchema = z
  .object({
    watch: z.array(z.string().min(1)).optional(),
    socket: z.string().min(1).optional(),
    state: z.string().min(1).optional(),
    budgetTokens: z.number().int().positive().optional(),
    reserveRatio: z.number().gt(0).lt(1).optional(),
    softWatermark: z.number().gt(0).lt(1).optional(),
    hysteresis: z.number().min(0).lt(1).optional(),
    minPlanIntervalMs: z.number().int().min(0).optional(),
    maxLineBytes: z.number().int().min(1024).optional(),
    maxMessageBytes: z.number().int().min(1024).optional(),
    idleTimeoutMs: z.number().int().positive().optional(),
    socketGroup: z.union([z.string().min(1), z.number().int().min(0)]).nullable().optional(),
    summarizer: summarizerSchema.optional(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
    formats: z.record(z.string(), z.enum(TRANSCRIPT_FORMATS)).optional(),
    encoding: z.enum(['o200k_base', 'cl100k_base']).optional(),
    /** The HTTP proxy between agents and their providers (off unless `proxy.listen` is set). */
    proxy: proxyConfigSchema.optional(),
    followSymlinks: z.boolean().optional(),
    maxClients: z.number().int().positive().optional(),
    clientIdleTimeoutMs: z.number().int().min(0).optional(),
    partialLineTimeoutMs: z.number().int().min(0).optional(),
    shutdownTimeoutMs: z.number().int().positive().optional(),
    /** Longest wait between a template change and the warm snapshot write holding it (0 = at once). */
    warmSnapshotDelayMs: z.number().int().min(0).optional(),
    archive: z
      .object({
        /** Replace secrets in archived originals by `[REDACTED:<rule>]` (default true). */
        redactSecrets: z.boolean().optional(),
      })
      .strict()
      .optional(),
    /** The memory budget of tailed session models (see docs/configuration.md). */
    memory: z
      .object({
        /** Tokens all in-memory session models may hold together; 0 = no bound (default 5 M). */
        maxSessionTokens: z.number().int().min(0).optional(),
        /** A subscribed session is released only after this long without an append (default 60 s). */
        releaseAfterMs: z.number().int().min(0).optional(),
        /** A session with no append for this long is released even within the budget; 0 = never (default 5 min). */
        idleReleaseMs: z.number().int().min(0).optional(),
        /** Sessions fed over the socket (session.sync) in memory at once; 0 = no bound (default 64). */
        maxFedSessions: z.number().int().min(0).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type ConfigFile = z.infer<typeof configFileSchema>;
export type SummarizerConfig = z.infer<typeof summarizerSchema>;

/** Every daemon option resolved: defaults applied, validated, frozen. */
export interface DaemonOptions {
  readonly watch: readonly string[];
  readonly socketPath: string;
  readonly stateDir: string;
  readonly budgetTokens: number | undefined;
  readonly reserveRatio: number;
  readonly softWatermark: number;
  readonly hysteresis: number;
  readonly minPlanIntervalMs: number;
  readonly maxLineBytes: number;
  readonly maxMessageBytes: number;
  readonly idleTimeoutMs: number;
  readonly socketGroup: string | number | undefined;
  readonly summarizer: SummarizerConfig;
  readonly logLevel: string;
  readonly formats: Readonly<Record<string, (typeof TRANSCRIPT_FORMATS)[number]>>;
  readonly encoding: 'o200k_base' | 'cl100k_base';
  /** Proxy settings; undefined when the proxy is off. */
  readonly proxy: ProxyOptions | undefined;
  readonly archive: { readonly redactSecrets: boolean };
  /** Budget of tokens held by tailed session models; over it the least recently active are released. */
  readonly memory: MemoryBudget;
  /** Follow symlinks that lead out of the watch roots (default false). */
  readonly followSymlinks: boolean;
  /** Socket connections served at once (default 128). */
  readonly maxClients: number;
  /** Close an unsubscribed connection idle this long (default 10 min; 0 = never). */
  readonly clientIdleTimeoutMs: number;
  /** Close a connection that leaves a request line unfinished this long (default 30 s; 0 = never). */
  readonly partialLineTimeoutMs: number;
  /** On SIGTERM, how long replies and harvests in flight may take before the store closes (default 10 s). */
  readonly shutdownTimeoutMs: number;
  /** Longest wait between a template change and the warm snapshot write holding it (default 2 s; 0 = at once). */
  readonly warmSnapshotDelayMs: number;
}

export const DEFAULTS = Object.freeze({
  reserveRatio: 0.15,
  softWatermark: 0.6,
  hysteresis: 0.1,
  minPlanIntervalMs: 5_000,
  maxLineBytes: 8 * 1024 * 1024,
  maxMessageBytes: 4 * 1024 * 1024,
  idleTimeoutMs: 30 * 60 * 1000,
  logLevel: 'info',
  maxClients: 128,
  clientIdleTimeoutMs: 10 * 60 * 1000,
  partialLineTimeoutMs: 30_000,
  shutdownTimeoutMs: 10_000,
});

function formatIssues(error: z.ZodError, origin: string): string {
  return error.issues
    .map((i) => {
      const field = i.path.length > 0 ? i.path.join('.') : '(root)';
      if (i.code === 'unrecognized_keys' && i.path.length === 0) {
        return i.keys
          .map((k) => {
            const hint = closestName(k, Object.keys(configFileSchema.shape));
            return `${origin}: unknown field "${k}"${hint !== undefined ? ` (did you mean "${hint}"?)` : ''}`;
          })
          .join('; ');
      }
      return `${origin}: field "${field}": ${i.message}`;
    })
    .join('; ');
}

/** Read and validate a config file; errors name the file and the bad field. */
export function loadConfigFile(path: string): ConfigFile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `cannot read config ${path}: ${describeError(err)}`, { path });
  }
  const parsed = configFileSchema.safeParse(raw);
  if (!parsed.success) throw new ContextdError(ErrorCode.CONFIG_INVALID, formatIssues(parsed.error, path), { path });
  return parsed.data;
}

/**
 * Merge config file and CLI flags (flags win), validate once, apply defaults, freeze.
 * `flags` uses the config file's field names.
 */
export function resolveDaemonOptions(file: ConfigFile, flags: ConfigFile, env: Readonly<Record<string, string | undefined>> = process.env): DaemonOptions {
  const defined = Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined));
  const parsed = configFileSchema.safeParse({ ...file, ...defined });
  if (!parsed.success) throw new ContextdError(ErrorCode.CONFIG_INVALID, formatIssues(parsed.error, 'options'));
  const c = parsed.data;
  const reserveRatio = c.reserveRatio ?? DEFAULTS.reserveRatio;
  const softWatermark = c.softWatermark ?? DEFAULTS.softWatermark;
  if (softWatermark >= 1 - reserveRatio) {
    throw new ContextdError(
      ErrorCode.CONFIG_INVALID,
      `options: field "softWatermark" (${softWatermark}) must be below the reserve line 1 − reserveRatio (${1 - reserveRatio})`,
    );
  }
  const idleTimeoutMs = c.idleTimeoutMs ?? DEFAULTS.idleTimeoutMs;
  const hysteresis = c.hysteresis ?? DEFAULTS.hysteresis;
  return Object.freeze({
    watch: Object.freeze(c.watch ?? defaultWatchDirs(env)),
    socketPath: c.socket ?? defaultSocketPath(env),
    stateDir: c.state ?? defaultStateDir(env),
    budgetTokens: c.budgetTokens,
    reserveRatio,
    softWatermark,
    hysteresis,
    minPlanIntervalMs: c.minPlanIntervalMs ?? DEFAULTS.minPlanIntervalMs,
    maxLineBytes: c.maxLineBytes ?? DEFAULTS.maxLineBytes,
    maxMessageBytes: c.maxMessageBytes ?? DEFAULTS.maxMessageBytes,
    idleTimeoutMs,
    socketGroup: c.socketGroup ?? undefined,
    summarizer: Object.freeze(c.summarizer ?? { kind: 'extractive' as const }),
    logLevel: c.logLevel ?? DEFAULTS.logLevel,
    formats: Object.freeze({ ...(c.formats ?? {}) }),
    encoding: c.encoding ?? 'o200k_base',
    proxy: resolveProxyOptions(c.proxy, { idleTimeoutMs, budgetTokens: c.budgetTokens, reserveRatio, hysteresis }),
    archive: Object.freeze({ redactSecrets: c.archive?.redactSecrets ?? true }),
    memory: Object.freeze({
      maxSessionTokens: c.memory?.maxSessionTokens ?? MEMORY_DEFAULTS.maxSessionTokens,
      releaseAfterMs: c.memory?.releaseAfterMs ?? MEMORY_DEFAULTS.releaseAfterMs,
      idleReleaseMs: c.memory?.idleReleaseMs ?? MEMORY_DEFAULTS.idleReleaseMs,
      maxFedSessions: c.memory?.maxFedSessions ?? MEMORY_DEFAULTS.maxFedSessions,
    }),
    followSymlinks: c.followSymlinks ?? false,
    maxClients: c.maxClients ?? DEFAULTS.maxClients,
    clientIdleTimeoutMs: c.clientIdleTimeoutMs ?? DEFAULTS.clientIdleTimeoutMs,
    partialLineTimeoutMs: c.partialLineTimeoutMs ?? DEFAULTS.partialLineTimeoutMs,
    shutdownTimeoutMs: c.shutdownTimeoutMs ?? DEFAULTS.shutdownTimeoutMs,
    warmSnapshotDelayMs: c.warmSnapshotDelayMs ?? DEFAULT_SNAPSHOT_DELAY_MS,
  });
}
