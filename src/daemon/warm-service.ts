import { harvestSession, loadTranscriptPrefix, type LoadedSession } from '../harvest/index.js';
import type { TranscriptFormat } from '../ingest/types.js';
import type { ReadIdentity } from '../ingest/decoder.js';
import { redactSync } from '../harvest/redact.js';
import { bootstrap, DEFAULT_BOOTSTRAP_BUDGET, recordOutcome, type BootstrapResult } from '../warm/index.js';
import { refreshWarmSnapshot, WarmSnapshotWriter } from '../warm/snapshot.js';
import { TemplateStore } from '../store/templates.js';
import type { Db } from '../store/index.js';
import type { TokenCounter } from '../model/tokens.js';
import type { Logger } from '../util/logger.js';
import type { LiveSession } from './live-session.js';

export interface WarmServiceDeps {
  readonly logger: Logger;
  readonly tokenCounter: TokenCounter;
  readonly now?: () => number;
  /** State folder to keep the warm snapshot in (read by `contextd hook` while the daemon is down); none when unset. */
  readonly stateDir?: string;
  /** Longest transcript line parsed when a session is read back for harvest (default 8 MiB, as the tailer). */
  readonly maxLineBytes?: number;
  /** Longest wait between a template change and the snapshot write holding it (default 2 s; 0 = at once). */
  readonly snapshotDelayMs?: number;
  /** What the tailer read of a transcript, so a harvest never reads a file that replaced it or was rewritten in place. */
  readonly tailedFile?: (file: string) => ReadIdentity | undefined;
}

/**
 * The daemon's side of harvest → store → warm: harvests a finished session from its
 * transcript (the originals, not the compacted context), serves bootstraps, and feeds the
 * session's outcome back to the templates that were bootstrapped on the same connection.
 */
export class WarmService {
  private readonly store: TemplateStore;
  private readonly log: Logger;
  /** connection id → templates it was given by warm.bootstrap. */
  private readonly bootstrapped = new Map<string, Set<string>>();
  /** Coalesced snapshot rewrites; none without a state folder. */
  private readonly snapshot: WarmSnapshotWriter | undefined;

  constructor(db: Db, private readonly deps: WarmServiceDeps) {
    this.store = new TemplateStore(db);
    this.log = deps.logger.child({ component: 'warm' });
    if (deps.stateDir !== undefined) {
      // A store from before snapshots (or changed by a command while the daemon was down) gets one now.
      refreshWarmSnapshot(this.store, deps.stateDir, deps.logger, deps.now?.());
      this.snapshot = new WarmSnapshotWriter(this.store, deps.stateDir, deps.logger, deps.snapshotDelayMs, deps.now);
    }
  }

  /** Writes a pending snapshot change now; later changes are not written. Call before the store closes. */
  close(): void {
    this.snapshot?.close();
  }

  /**
   * Harvest `s` into the warm templates: from `history` when given (what a released session held),
   * else from its transcript or the messages it holds (`source`).
   */
  async harvest(s: LiveSession, outcome: 'success' | 'failure' | 'unknown', connectionId?: string, history?: LoadedSession): Promise<{ harvested: number }> {
    const { messages, meta } = history ?? (await this.source(s));
    this.log.debug({ sessionId: s.sessionId, messages: messages.length, outcome }, 'harvest started');
    const result = await harvestSession(
      { sessionId: s.sessionId, messages, meta: { repo: meta.repo, cwd: meta.cwd, model: meta.model }, outcome, source: s.file },
      { store: this.store, tokenCounter: this.deps.tokenCounter, logger: this.deps.logger, ...(this.deps.now ? { now: this.deps.now } : {}) },
    );
    const used = new Set([...s.bootstrappedTemplates, ...(connectionId ? (this.bootstrapped.get(connectionId) ?? []) : [])]);
    const fedBack = used.size > 0 && outcome !== 'unknown' ? recordOutcome([...used], outcome, { store: this.store }) : 0;
    if (result.templateId || fedBack > 0) this.snapshot?.request();
    this.log.info({ sessionId: s.sessionId, outcome, templateId: result.templateId ?? null, value: result.value, skipped: result.skipped ?? null, feedback: used.size }, 'session harvested');
    return { harvested: result.templateId ? 1 : 0 };
  }

  /**
   * Serve one throwaway bootstrap (read-only, recorded nowhere), so the first agent's hook does
   * not pay for cold code paths and statements; a failure here is only logged.
   */
  warmUp(): void {
    try {
      bootstrap({ task: 'warm up: fix the failing test in the build', budgetTokens: DEFAULT_BOOTSTRAP_BUDGET }, { store: this.store, tokenCounter: this.deps.tokenCounter });
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'bootstrap warm-up failed');
    }
  }

  /**
   * The whole history of a session, compacted-away originals included and the agent's own
   * compactions ignored: harvest wants the originals. A tailed session's transcript is read
   * back up to where the tailer had read (the daemon keeps no second copy of it in memory); a
   * session fed over the socket or through the proxy has the messages the agent sent.
   */
  private source(s: LiveSession): Promise<LoadedSession> {
    if (!s.harvestsFromTranscript) return Promise.resolve(s.history.snapshot(s.sessionId));
    // A file replaced after the tailer's last read, before its reset: FILE_REPLACED, not the new file's lines.
    return loadTranscriptPrefix(s.file, s.sessionId, s.format as TranscriptFormat, s.harvestEndOffset(), this.deps.maxLineBytes, this.deps.tailedFile?.(s.file));
  }

  /** Templates a connection was given by warm.bootstrap. */
  bootstrappedBy(connectionId: string): readonly string[] {
    return [...(this.bootstrapped.get(connectionId) ?? [])];
  }

  /** A connection closed: its bootstrap bookkeeping goes (sessions keep their own copy). */
  forgetConnection(connectionId: string): void {
    this.bootstrapped.delete(connectionId);
  }

  bootstrap(req: { task: string; repo?: string; budgetTokens: number }, connectionId?: string): BootstrapResult {
    const result = bootstrap(req, { store: this.store, tokenCounter: this.deps.tokenCounter });
    if (connectionId && result.templateIds.length > 0) {
      let set = this.bootstrapped.get(connectionId);
      if (!set) this.bootstrapped.set(connectionId, (set = new Set()));
      for (const id of result.templateIds) set.add(id);
    }
    this.log.info({ task: redactSync(req.task.slice(0, 120)).text, repo: req.repo ?? null, templateIds: result.templateIds, tokens: result.tokens, budgetTokens: req.budgetTokens }, 'bootstrap served');
    return result;
  }
}
