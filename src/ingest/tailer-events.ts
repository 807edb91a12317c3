/**
 * The Tailer's public types: lifecycle states, the typed event map and its payloads.
 */
import type { LineCounts, TranscriptFormat } from './types.js';
import type { TranscriptEvent } from '../model/messages.js';
import type { LineError } from './decoder.js';

export const TAILER_STATES = ['new', 'running', 'closing', 'closed'] as const;
export type TailerState = (typeof TAILER_STATES)[number];

export type TailerResetReason = 'truncated' | 'rotated';

export interface TailerSessionInfo {
  readonly file: string;
  readonly sessionId: string;
  readonly format: TranscriptFormat;
}

export interface TailerBatch extends TailerSessionInfo {
  readonly events: TranscriptEvent[];
  /** Committed offset (line boundary) before and after these events. */
  readonly fromOffset: number;
  readonly toOffset: number;
}

export interface TailerReset {
  readonly file: string;
  readonly sessionId: string;
  readonly reason: TailerResetReason;
}

export interface TailerRemoved {
  readonly file: string;
  readonly sessionId: string;
}

export interface TailerLineError extends LineError {
  readonly file: string;
  readonly sessionId: string;
}

/** Typed event map of the Tailer. */
export interface TailerEvents {
  session: [info: TailerSessionInfo];
  events: [batch: TailerBatch];
  /** Emitted BEFORE the file is re-read from 0: drop the session's model, rebuild from the following 'events'. */
  reset: [info: TailerReset];
  removed: [info: TailerRemoved];
  'line-error': [info: TailerLineError];
  /** Non-fatal (e.g. TAIL_FILE_GONE). Only emitted when someone listens; otherwise logged. */
  error: [err: Error];
  ready: [];
}

/** Per-file figures from `Tailer.stats()`. */
export interface TailerFileStats {
  readonly file: string;
  readonly sessionId: string;
  readonly format: TranscriptFormat | undefined;
  /** Offset just past the last complete line. */
  readonly offset: number;
  /** Bytes read so far (offset + the held partial line). */
  readonly readOffset: number;
  readonly inode: number | undefined;
  readonly live: boolean;
  readonly counts: LineCounts;
}
