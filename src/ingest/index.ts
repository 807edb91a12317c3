/**
 * ingest: transcript formats → normalized events, and the live tailer.
 */
export * from './types.js';
export { detectFormat, createAdapter } from './detect.js';
export { createClaudeCodeAdapter, isInjectedClaudeText } from './adapters/claude-code.js';
export { createCodexAdapter, decodeCodexOutput } from './adapters/codex.js';
export { createOpenAIChatAdapter, normalizeOpenAIMessages } from './adapters/openai-chat.js';
export { parseTimestamp } from './adapters/common.js';
export { sessionIdFor, sessionIdForFile, agentSessionId, pathSessionId } from './session-id.js';
export {
  TranscriptDecoder,
  readTranscriptFile,
  readTranscriptPrefix,
  DEFAULT_MAX_LINE_BYTES,
  type LineError,
  type TranscriptDecoderOptions,
  type TranscriptFile,
  type ReadTranscriptOptions,
  type ReadIdentity,
} from './decoder.js';
export {
  Tailer,
  TAILER_STATES,
  type TailerState,
  type TailerEvents,
  type TailerBatch,
  type TailerSessionInfo,
  type TailerReset,
  type TailerResetReason,
  type TailerRemoved,
  type TailerLineError,
  type TailerFileStats,
  type TailerOptions,
  type ResolvedTailerOptions,
} from './tailer.js';
export { resolveTailerOptions } from './tailer-options.js';
export { utf8BomLength, decodeUtf8File } from './bom.js';
