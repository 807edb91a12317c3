/**
 * Data types of compaction (design §5). Plans are plain data: the daemon archives the
 * originals under each edit's handle and pushes the plan; compact/ never does I/O.
 */
import type { Message, PointerBasis } from '../model/messages.js';
import type { Budget, HeadroomSnapshot, ScoreFactors, Section } from '../model/types.js';

/** Why an edit exists; the name of the detector that proposed it. */
export const EDIT_REASONS = [
  'redundant-tool-output',
  'stale-read',
  'superseded-reasoning',
  'verbose-error-trace',
  'low-score',
] as const;
export type EditReason = (typeof EDIT_REASONS)[number];

/**
 * What compact/ needs from the session model. `SessionModel` (src/model) satisfies it;
 * declared structurally so compact/ depends on the shape, not the class.
 */
export interface CompactableModel {
  readonly version: number;
  messages(): readonly Message[];
  sections(): readonly Section[];
  section(id: string): Section | undefined;
  messagesOf(sectionId: string): readonly Message[];
  tokens(): number;
  headroom(): HeadroomSnapshot;
  budget(): Budget;
  goal(): { text: string; sectionId?: string };
  /**
   * How the model's own count maps to what the agent reports (`reported ≈ offset + ratio ×
   * counted`); watermark targets are converted through it. Absent or `samples: 0`: identity.
   */
  calibration?(): { readonly samples: number; readonly offsetTokens: number; readonly ratio: number };
  /**
   * Moves whenever sections may leave the context (truncate, reset, an applied edit); appends
   * leave it. A plan made while it moved is stale: planCompaction then throws PLAN_EXPIRED.
   */
  readonly epoch?: number;
}

/** What an accepted edit puts in place of the sections it replaces. */
export interface ReplacementInput {
  text: string;
  role?: 'user' | 'assistant' | 'system';
  editId: string;
  handle: string;
  reason: string;
}

/** A model that can also take an accepted edit. */
export interface EditableModel extends CompactableModel {
  replaceSections(
    sectionIds: readonly string[],
    summary: ReplacementInput,
  ): Section;
  /**
   * Several edits at once, all or none, checked against the model before the first (a model
   * that scores its sections can then score once, not once per edit). Optional: without it,
   * `applyPlan` replaces edit by edit.
   */
  replaceEach?(
    edits: readonly { readonly sectionIds: readonly string[]; readonly summary: ReplacementInput }[],
  ): Section[];
}

/** Everything a detector may look at. Built once per plan. */
export interface DetectorContext {
  readonly sections: readonly Section[];
  /** Messages of a section, in order. */
  messagesOf(sectionId: string): readonly Message[];
  readonly goal: string;
}

/** A detector's proposal: these sections can be compacted for this reason. */
/** One section a plan may replace, with why (a detector's candidate, or a low score). */
export interface Unit {
  readonly section: Section;
  readonly index: number;
  readonly reason: EditReason;
  readonly detail: Readonly<Record<string, unknown>>;
  /** Candidate group (superseded-reasoning runs merge only within their candidate). */
  readonly group: number;
}

export interface Candidate {
  /** Section ids in transcript order (contiguous or not; the planner splits into runs). */
  readonly sectionIds: readonly string[];
  readonly reason: EditReason;
  /** Reason-specific facts, e.g. `{newer: 's57', except: [...]}` or `{path}`. */
  readonly detail: Readonly<Record<string, unknown>>;
}

export interface Detector {
  readonly name: EditReason;
  detect(ctx: DetectorContext): Candidate[];
}

/** Input of a summarizer: the sections one edit replaces. */
export interface SummarizeInput {
  readonly reason: EditReason;
  readonly sections: readonly Section[];
  readonly messages: readonly Message[];
  /** The session's current goal (latest user instruction). */
  readonly goal: string;
  /** Detector facts for this edit (e.g. the newer section a redundant output points to). */
  readonly detail?: Readonly<Record<string, unknown>>;
  /** Terms that later turns or the goal mention: facts carrying them are kept first. */
  readonly keyTerms?: readonly string[];
  /** Soft length bound of the summary, in tokens (≈ 3.5 chars each). */
  readonly maxTokens?: number;
  /** The archive handle the originals are stored under (for notes such as omitted images). */
  readonly handle?: string;
}

export interface Summarizer {
  readonly name: string;
  /** Rejects with `signal`'s reason when it aborts first: the plan gave the summary up. */
  summarize(input: SummarizeInput, signal?: AbortSignal): Promise<string>;
}

/** Facts of replaced sections that were checked against the summaries. */
export interface SurvivalReport {
  readonly checked: number;
  /** Facts missing from a summary before re-injection (edit id + fact). */
  readonly missing: readonly { readonly editId: string; readonly fact: string }[];
  readonly reinjected: number;
}

export interface Edit {
  readonly editId: string;
  readonly replaces: readonly string[];
  readonly messageRange: { readonly start: number; readonly end: number };
  readonly summary: { readonly role: 'user' | 'assistant'; readonly content: string };
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly reason: EditReason;
  /** Score factors of every replaced section, keyed by section id. */
  readonly scores: Readonly<Record<string, ScoreFactors>>;
  /** Archive handle quoted in the summary (`[contextd recall <handle>]`). */
  readonly handle: string;
  /**
   * A pointer summary ("a later identical call …"): the sections its claim rests on, which
   * later plans keep in view (pointers.ts). Stored with the plan, so a replayed edit has it too.
   */
  readonly pointer?: PointerBasis;
}

export const PLAN_MODES = ['reserve', 'soft', 'manual'] as const;
export type PlanMode = (typeof PLAN_MODES)[number];

export interface Plan {
  readonly planId: string;
  readonly sessionId: string;
  readonly createdAt: number;
  readonly mode: PlanMode;
  readonly headroomBefore: number;
  readonly headroomAfter: number;
  /** Raw: the model's own (tiktoken) count of the live context before / after the plan. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /**
   * Reported: the same sizes in the agent's terms (calibrated to its usage reports; equal to
   * the raw counts when it reported none). Headroom is computed from these.
   */
  readonly calibratedTokensBefore: number;
  readonly calibratedTokensAfter: number;
  readonly edits: readonly Edit[];
  readonly survival: SurvivalReport;
  readonly modelVersion: number;
}

/** A chat message in the openai-chat shape, as the compacted context is written out. */
export interface OpenAIChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  /** Hidden reasoning kept with its message (hermes-style `reasoning`). */
  reasoning?: string;
}

export const STRATEGIES = ['contextd', 'truncate', 'mask', 'middle'] as const;
export type StrategyName = (typeof STRATEGIES)[number];

export interface CompactResult {
  readonly strategy: StrategyName;
  /**
   * Context size before / after in the agent's terms: calibrated to its usage reports, the
   * count `contextd inspect` shows (the raw count when the transcript reports no usage).
   */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** The token target in the same terms: budgetTokens × (1 − reserveRatio). */
  readonly budget: number;
  /** Raw: our own tiktoken count of the messages before / after, and the target in that count. */
  readonly countedTokensBefore: number;
  readonly countedTokensAfter: number;
  readonly countedBudget: number;
  readonly edits: readonly {
    readonly editId: string;
    readonly replaces: readonly string[];
    readonly reason: string;
    readonly tokensBefore: number;
    readonly tokensAfter: number;
    readonly scores: Readonly<Record<string, ScoreFactors>>;
    /** contextd edits: the archive handle the summary quotes (the caller archives the originals under it). */
    readonly handle?: string;
  }[];
  readonly messages: readonly OpenAIChatMessage[];
  /**
   * Set when the target cannot be met: without dropping anchors (`anchors`), or at all, because
   * the agent's own context that no transcript edit removes (system prompt, tool definitions:
   * `overheadTokens`, from its usage reports) leaves too little room.
   */
  readonly unreachable?: { readonly anchors: readonly string[]; readonly anchorTokens: number; readonly overheadTokens?: number };
}
