/**
 * Ingest's own types: transcript format names, per-file line counts and the adapter contract.
 *
 * Adapters are stateful per file (they pair tool calls, deduplicate usage, follow the
 * Claude Code DAG) and turn each raw JSONL line into zero or more `TranscriptEvent`s
 * (defined in model/messages.ts, which knows nothing of the raw formats).
 */
import type { TranscriptEvent } from '../model/messages.js';

export const TRANSCRIPT_FORMATS = ['openai-chat', 'claude-code', 'codex'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

/** Counts a tailer or offline reader keeps about the raw lines of one file. */
export interface LineCounts {
  lines: number;
  /** Lines that were not valid JSON (or not a JSON object). */
  malformedLines: number;
  /** Lines larger than maxLineBytes, skipped. */
  oversizedLines: number;
  /** JSON lines of a type the adapter does not model. */
  unknownLines: number;
}

/**
 * A per-file parser. `parseLine` receives an already JSON-parsed object and returns events.
 * Adapters must never throw on odd input: unknown shapes become `unknown` events.
 */
export interface TranscriptAdapter {
  readonly format: TranscriptFormat;
  parseLine(value: Record<string, unknown>, sourceOffset: number): TranscriptEvent[];
}
