/**
 * The agent-neutral half of `contextd fork`: read a transcript, plan a compaction down to a
 * budget, and lay out the compacted conversation as a list of kept messages and summaries
 * (each summary standing where the sections it replaces stood). The agent-specific writers
 * (claude.ts, codex.ts) turn that list into the agent's own line format.
 */
import { readTranscriptFile } from '../../ingest/decoder.js';
import { sessionIdForFile } from '../../ingest/session-id.js';
import type { TranscriptFormat } from '../../ingest/types.js';
import type { Message, SessionMeta } from '../../model/messages.js';
import { SessionModel } from '../../model/session.js';
import { planCompaction } from '../../compact/planner.js';
import { archiveEntries, type ArchiveEntry } from '../../compact/archive-entries.js';
import type { Edit } from '../../compact/types.js';

/** One entry of the compacted conversation. */
export type ForkEntry = { readonly kind: 'message'; readonly message: Message } | { readonly kind: 'summary'; readonly edit: Edit };

export interface ForkLayout {
  readonly format: TranscriptFormat;
  readonly sourceSessionId: string;
  readonly meta: SessionMeta;
  readonly entries: ForkEntry[];
  readonly edits: readonly Edit[];
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** Originals of every edit, to archive under the handle its summary quotes (not yet redacted). */
  readonly archive: ArchiveEntry[];
}

/** Share of the budget kept free, as for the daemon's plans. */
export const FORK_RESERVE_RATIO = 0.15;

/** Plan the compacted copy of `file` that fits `budgetTokens`. */
export async function layoutFork(file: string, budgetTokens: number): Promise<ForkLayout> {
  const transcript = await readTranscriptFile(file);
  const sourceSessionId = sessionIdForFile(file);
  const model = new SessionModel({ sessionId: sourceSessionId, budgetTokens, reserveRatio: FORK_RESERVE_RATIO });
  model.applyAll(transcript.events);
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(budgetTokens * (1 - FORK_RESERVE_RATIO)), reserveRatio: FORK_RESERVE_RATIO });
  const editOf = new Map<string, Edit>();
  for (const e of plan.edits) for (const id of e.replaces) editOf.set(id, e);
  const entries: ForkEntry[] = [];
  const placed = new Set<Edit>();
  for (const section of model.sections()) {
    const edit = editOf.get(section.id);
    if (edit) {
      if (!placed.has(edit)) entries.push({ kind: 'summary', edit });
      placed.add(edit);
      continue;
    }
    for (const message of model.messagesOf(section.id)) entries.push({ kind: 'message', message });
  }
  const archive = archiveEntries(model, plan.edits, { sessionId: sourceSessionId, createdAt: plan.createdAt });
  return {
    format: transcript.format,
    sourceSessionId,
    meta: model.meta(),
    entries,
    edits: plan.edits,
    tokensBefore: plan.tokensBefore,
    tokensAfter: plan.tokensAfter,
    archive,
  };
}
