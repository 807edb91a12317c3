/**
 * The scored section model (design §4). Pure data: no fs, sockets or SQLite.
 */

export const SECTION_KINDS = [
  'system',
  'user-instruction',
  'user-message',
  'assistant-text',
  'reasoning',
  'tool-call',
  'tool-output',
  'error-trace',
  'summary',
] as const;
export type SectionKind = (typeof SECTION_KINDS)[number];

export const PRIORITIES = ['critical', 'high', 'medium', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];

/** Inclusive range of message indexes (positions in the live message list) a section covers. */
export interface MessageRange {
  readonly start: number;
  readonly end: number;
}

export interface Recency {
  /** Turn index of the section (a turn starts at each real user message). */
  readonly turn: number;
  /** Turns since this section (0 = current turn). */
  readonly ageTurns: number;
  /** Epoch ms of the section's last message, if known. */
  readonly timestamp?: number;
  /** Seconds between this section and the newest message, if both timestamps are known. */
  readonly ageSeconds?: number;
  /** recencyWeight = exp(-age/halfLife) combining turns and time, 0–1. */
  readonly weight: number;
}

/** Every factor behind a score, kept so each decision can be logged. */
export interface ScoreFactors {
  readonly priorityWeight: number;
  readonly relevance: number;
  readonly recencyWeight: number;
  readonly density: number;
  readonly score: number;
}

/** The unit of compaction: one message, or an assistant tool call together with its result(s). */
export interface Section {
  /** Stable id within the session, e.g. `s42`; never reused after truncation. */
  readonly id: string;
  readonly sessionId: string;
  readonly messageRange: MessageRange;
  /** Ids of the messages in this section (the tool call message and its result messages). */
  readonly messageIds: readonly string[];
  readonly kind: SectionKind;
  readonly priority: Priority;
  /** 0–1 lexical relevance to the current goal. */
  readonly relevance: number;
  readonly recency: Recency;
  /** 0–1 new information per token; near-duplicates of newer sections score low. */
  readonly density: number;
  readonly tokens: number;
  /** Never compacted: system prompt, user instructions, key decisions, the current goal. */
  readonly anchor: boolean;
  readonly score: number;
  readonly factors: ScoreFactors;
  /** Tool name for tool-call sections. */
  readonly toolName?: string;
  /** A tool call still waiting for its result (never compacted on its own). */
  readonly pending?: boolean;
  /** The section is a contextd summary that replaced earlier sections. */
  readonly compacted?: boolean;
}

export interface Budget {
  /** Context window in tokens. */
  readonly total: number;
  /** Share of the window kept free (default 0.15). */
  readonly reserveRatio: number;
  /** Where `total` came from. */
  readonly source: 'config' | 'reported' | 'preset' | 'default';
}

export interface HeadroomSnapshot {
  /**
   * Tokens counted against the budget: our tiktoken count of the visible transcript, or —
   * once the agent has reported usage — that count calibrated to the agent's own figures
   * (which also hold its system prompt and tool definitions): `offset + ratio × counted`.
   */
  readonly tokens: number;
  /** Our own tiktoken count of the live messages (the sum of section tokens). */
  readonly countedTokens: number;
  readonly total: number;
  readonly reserveRatio: number;
  /** 1 − tokens/total. */
  readonly headroom: number;
  readonly sections: number;
  /** Last token count the agent itself reported, if any. */
  readonly reportedTokens?: number;
}
