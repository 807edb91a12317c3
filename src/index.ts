/**
 * contextd's library entry. The socket client is also its own subpath, `contextd/client`.
 * The pieces are exported so a host can embed the pipeline: ingest → model → compact.
 */
export { ContextdClient, type ContextdClientOptions, type ContextdClientEvents } from './ipc/client.js';
export * as ipc from './ipc/index.js';
export { TranscriptDecoder, Tailer, readTranscriptFile, detectFormat } from './ingest/index.js';
export type { TranscriptFormat } from './ingest/types.js';
export type { Message, TranscriptEvent, ToolCall, SessionMeta } from './model/messages.js';
export { SessionModel, type SessionModelOptions } from './model/index.js';
export type { Section, Budget, HeadroomSnapshot, ScoreFactors } from './model/types.js';
export { createTokenCounter, type TokenCounter } from './model/tokens.js';
export { planCompaction, applyPlan, compactWithStrategy, createSummarizer, type Plan, type Edit } from './compact/index.js';
export { Daemon } from './daemon/daemon.js';
export type { DaemonStatus } from './daemon/api.js';
export { resolveDaemonOptions, type DaemonOptions } from './daemon/config.js';
export { ContextdError, ErrorCode } from './util/errors.js';
export { VERSION } from './version.js';
