/**
 * The archive records of compaction edits: each edit's originals under the handle its summary
 * quotes, so every quoted handle resolves. The one place they are built, whoever archives
 * them (the daemon's plans, the proxy's plans, `contextd compact`, `contextd fork`, the
 * hooks' record of an agent's own compaction, the benches), and the one place their secrets
 * are redacted (`redactEntries`, with the filter `archive.redactSecrets` selects). Data only:
 * the caller writes them to the store.
 */
import type { Message } from '../model/messages.js';
import type { TokenCounter } from '../model/tokens.js';
import type { CompactableModel } from './types.js';

/** How many findings of one redaction rule were replaced (the store's `RedactionCount`). */
export interface RedactionTally {
  readonly rule: string;
  readonly count: number;
}

/** Turns originals into what is archived (secret redaction), with what was redacted. */
export type OriginalsFilter = (messages: readonly Message[]) => Promise<{ messages: Message[]; findings: RedactionTally[] }>;

/** An archive record of one edit's originals (the shape the store's `Archive.putMany` takes). */
export interface ArchiveEntry {
  readonly handle: string;
  readonly sessionId: string;
  readonly planId?: string | undefined;
  /** The plan edit that replaced the originals; none for an agent's own compaction. */
  readonly editId?: string | undefined;
  readonly reason: string;
  readonly sectionIds: readonly string[];
  readonly messages: readonly Message[];
  readonly tokens: number;
  readonly createdAt: number;
  /** Secrets replaced before archiving, counted per rule (set by `redactEntries`). */
  readonly redactions?: readonly RedactionTally[] | undefined;
}

/** What of an edit its archive record needs (a plan's edit, or an offline strategy's). */
export interface ArchivableEdit {
  /** Edits whose summary quotes no handle have nothing to archive. */
  readonly handle?: string | undefined;
  readonly editId: string;
  readonly reason: string;
  /** Section ids the edit replaces, in order. */
  readonly replaces: readonly string[];
  readonly tokensBefore: number;
}

/** The originals of every edit that quotes a handle, read from `model` (before the edits are applied). */
export function archiveEntries(
  model: Pick<CompactableModel, 'messagesOf'>,
  edits: readonly ArchivableEdit[],
  at: { readonly sessionId: string; readonly planId?: string; readonly createdAt: number },
): ArchiveEntry[] {
  return edits.flatMap((e) =>
    e.handle === undefined
      ? []
      : [{ handle: e.handle, sessionId: at.sessionId, ...(at.planId !== undefined ? { planId: at.planId } : {}), editId: e.editId, reason: e.reason, sectionIds: e.replaces, messages: e.replaces.flatMap((id) => [...model.messagesOf(id)]), tokens: e.tokensBefore, createdAt: at.createdAt }],
  );
}

/** `entries` with their originals passed through `filter` (none: kept as they are), and what it redacted. */
export async function redactEntries(entries: readonly ArchiveEntry[], filter: OriginalsFilter | undefined): Promise<(ArchiveEntry & { readonly redactions: readonly RedactionTally[] })[]> {
  return Promise.all(
    entries.map(async (e) => {
      const f = filter ? await filter(e.messages) : { messages: [...e.messages], findings: [] };
      return { ...e, messages: f.messages, redactions: f.findings };
    }),
  );
}

/** Originals no plan edit of ours replaced (an agent's own compaction, seen by a hook). */
export interface LooseOriginals {
  readonly handle: string;
  readonly sessionId: string;
  readonly reason: string;
  readonly messages: readonly Message[];
}

/** The archive record of `o`: no sections or edit; its tokens counted with `counter`. */
export function looseEntry(o: LooseOriginals, counter: Pick<TokenCounter, 'count'>, createdAt: number): ArchiveEntry {
  return { handle: o.handle, sessionId: o.sessionId, reason: o.reason, sectionIds: [], messages: o.messages, tokens: o.messages.reduce((n, m) => n + counter.count(m.text), 0), createdAt };
}
