/**
 * What contextd does on an agent's hook events, independent of the agent's output format:
 * warm bootstrap on a session's first prompt, re-injection of what the agent's own compaction
 * summary lost, and `session.end` when the session ends. I/O comes in through {@link HookDeps}
 * (the socket, the template store when the daemon is down, the archive), so this file never
 * opens a socket or a database itself.
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import type { LooseOriginals } from '../compact/archive-entries.js';
import type { TranscriptFile } from '../ingest/decoder.js';
import type { Message } from '../model/messages.js';
import type { HookEvent } from './hook-event.js';

// The transcript reader and the planner pull in tiktoken and the adapters: loaded only on the
// paths that read a transcript, so a first-prompt hook starts as fast as Node does.
async function readTranscript(path: string): Promise<TranscriptFile> {
  const { readTranscriptFile } = await import('../ingest/decoder.js');
  return readTranscriptFile(path);
}

/** A warm bootstrap, as `warm.bootstrap` returns it. */
export interface BootstrapAnswer {
  readonly messages: readonly { readonly role: string; readonly content: string }[];
  readonly tokens: number;
  readonly templateIds?: readonly string[];
  /** `tokens` is an upper bound, not a count (the daemon-down path bounds tokens by bytes). */
  readonly tokensAtMost?: boolean;
}

export interface HookDeps {
  /** One JSON-RPC call to the daemon; rejects (quickly) when it is down. */
  rpc(method: string, params: Record<string, unknown>): Promise<unknown>;
  /** The bootstrap read straight from the template store, for when the daemon is down. */
  localBootstrap(task: string, repo: string | undefined, budgetTokens: number): Promise<BootstrapAnswer | undefined>;
  /** Store an agent compaction's originals in the state dir's archive (compact/archive-entries.ts builds the record). */
  archive(entry: LooseOriginals): void;
  /** Token budget of a bootstrap (default 2000). */
  readonly bootstrapBudget: number;
  /**
   * Keep text for this session until the next hook of it takes it (PostCompact → SessionStart).
   * It is written to the state dir, so secrets in it are redacted first.
   */
  stash(sessionId: string, text: string): Promise<void>;
  /** Take (and remove) what was stashed for this session. */
  takeStash(sessionId: string): string | undefined;
  /** Record why something was skipped (never shown to the agent). */
  note(msg: string, fields?: Record<string, unknown>): void;
}

/** Transcript line markers of a model turn, per agent (a JSON-encoded line cannot hold them inside a string). */
const ASSISTANT_MARKERS = ['"type":"assistant"', '"role":"assistant"'];

/**
 * True when the transcript holds no model turn yet: the prompt being submitted is the
 * session's first. A resumed session (with earlier turns) is not bootstrapped again.
 */
export function isFirstPrompt(transcriptPath: string | undefined): boolean {
  if (!transcriptPath || !existsSync(transcriptPath)) return true;
  return !fileContainsAny(transcriptPath, ASSISTANT_MARKERS);
}

const SCAN_CHUNK_BYTES = 64 * 1024;

/**
 * Whether the file holds any of `needles` (ASCII), read in chunks from the start and stopped
 * at the first hit: this runs on every prompt, and a long session's first model turn is near
 * the top of a transcript that may be many megabytes.
 */
function fileContainsAny(path: string, needles: readonly string[]): boolean {
  const overlap = Math.max(...needles.map((n) => n.length)) - 1;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(SCAN_CHUNK_BYTES + overlap);
    let kept = 0;
    let position = 0;
    for (;;) {
      const n = readSync(fd, buf, kept, SCAN_CHUNK_BYTES, position);
      if (n === 0) return false;
      position += n;
      const total = kept + n;
      const view = buf.subarray(0, total);
      if (needles.some((m) => view.includes(m))) return true;
      // Keep the tail, so a needle split across two reads is still found.
      const keep = Math.min(overlap, total);
      buf.copy(buf, 0, total - keep, total);
      kept = keep;
    }
  } finally {
    closeSync(fd);
  }
}

function isBootstrap(v: unknown): v is BootstrapAnswer {
  return typeof v === 'object' && v !== null && Array.isArray((v as { messages?: unknown }).messages);
}

/** The warm-start text for a session's first prompt, or undefined (not first, nothing to add). */
export async function bootstrapContext(event: HookEvent, deps: HookDeps): Promise<string | undefined> {
  if (!event.prompt || !isFirstPrompt(event.transcriptPath)) return undefined;
  const params = { task: event.prompt, ...(event.cwd ? { repo: event.cwd } : {}), budgetTokens: deps.bootstrapBudget };
  let answer: BootstrapAnswer | undefined;
  try {
    const r = await deps.rpc('warm.bootstrap', params);
    answer = isBootstrap(r) ? r : undefined;
  } catch (err) {
    deps.note('daemon unavailable for warm.bootstrap; bootstrapping from the state folder', { err: (err as Error).message });
    answer = await deps.localBootstrap(event.prompt, event.cwd, deps.bootstrapBudget);
  }
  if (!answer || answer.messages.length === 0) return undefined;
  const body = answer.messages.map((m) => m.content.trim()).filter((c) => c.length > 0);
  if (body.length === 0) return undefined;
  return [`contextd warm start: what earlier sessions on similar tasks learned (${answer.tokensAtMost ? 'at most ' : ''}${answer.tokens} tokens).`, ...body].join('\n\n');
}

/** Messages before the agent's last compaction boundary, its summary, and the live context. */
export interface CompactionSplit {
  readonly before: Message[];
  readonly summary: string;
  /** Whether the transcript holds a boundary at all. */
  readonly compacted: boolean;
  /** Messages after the last boundary (all of them when there is none). */
  readonly live: Message[];
}

/**
 * Split a transcript at its last compaction (`reset` event). Without a boundary (yet), all
 * messages are "before" and the summary is empty.
 */
export async function splitAtCompaction(transcriptPath: string): Promise<CompactionSplit> {
  const file = await readTranscript(transcriptPath);
  let before: Message[] = [];
  let current: Message[] = [];
  let compacted = false;
  for (const e of file.events) {
    if (e.type === 'reset') {
      before = current.length > 0 ? current : before;
      current = [];
      compacted = true;
    } else if (e.type === 'message') current.push(e.message);
  }
  if (!compacted) return { before: current, summary: '', compacted, live: current };
  const summary = current
    .filter((m) => m.isSummary)
    .map((m) => m.text)
    .join('\n');
  return { before, summary, compacted, live: current };
}

/** The re-injection text for `before` checked against `summary`; archives the originals. */
async function recoveryText(sessionId: string, before: readonly Message[], summary: string, deps: HookDeps): Promise<string | undefined> {
  if (before.length === 0) return undefined;
  const [{ lostFacts }, { handleFor }] = await Promise.all([import('./lost-facts.js'), import('../compact/planner.js')]);
  const lost = lostFacts(before, summary);
  if (lost.lines.length === 0) return undefined;
  const handle = handleFor(sessionId, before);
  deps.archive({ handle, sessionId, reason: 'agent-compaction', messages: before });
  return [
    `contextd: the compaction summary of this session left out facts from the earlier conversation. They still hold:`,
    ...lost.lines,
    `The full earlier conversation is archived: run \`contextd recall ${handle}\` to read it [contextd recall ${handle}].`,
  ].join('\n');
}

/**
 * PostCompact (the summary is in the event, the boundary not yet in the transcript): work out
 * what the summary lost and stash it for the SessionStart(compact) hook that follows, which
 * is the event allowed to add context.
 */
export async function recordCompaction(event: HookEvent, deps: HookDeps): Promise<void> {
  if (!event.transcriptPath || event.compactSummary === undefined) return;
  const split = await splitAtCompaction(event.transcriptPath);
  // The boundary of this compaction is not written yet: the live context is all since the last one.
  const text = await recoveryText(event.sessionId, split.live, event.compactSummary, deps);
  if (text) await deps.stash(event.sessionId, text);
}

/**
 * After the agent compacted its own context: what its summary lost, with a recall handle for
 * the archived originals; undefined when nothing was lost. Uses what PostCompact stashed, else
 * (agents that write the boundary before this hook) the transcript's last boundary.
 */
export async function compactionRecovery(event: HookEvent, deps: HookDeps): Promise<string | undefined> {
  const stashed = deps.takeStash(event.sessionId);
  if (stashed) return stashed;
  if (!event.transcriptPath) return undefined;
  const split = await splitAtCompaction(event.transcriptPath);
  if (!split.compacted) {
    deps.note('no compaction summary: neither a PostCompact hook nor a boundary in the transcript', { transcript: event.transcriptPath });
    return undefined;
  }
  return await recoveryText(event.sessionId, split.before, split.summary, deps);
}

/** success when the last turn ended after a passing tool result, failure when the last tool result failed. */
export async function sessionOutcome(transcriptPath: string | undefined): Promise<'success' | 'failure' | 'unknown'> {
  if (!transcriptPath || !existsSync(transcriptPath)) return 'unknown';
  const file = await readTranscript(transcriptPath);
  let lastTool: Message | undefined;
  let endedTurn = false;
  for (const e of file.events) {
    if (e.type === 'message') {
      if (e.message.role === 'tool') lastTool = e.message;
      endedTurn = false;
    } else if (e.type === 'turn-end') endedTurn = true;
  }
  if (lastTool?.isError) return 'failure';
  return endedTurn ? 'success' : 'unknown';
}

/** Tell the daemon the session ended, so it is harvested now rather than after the idle timeout. */
export async function endSession(event: HookEvent, daemonSessionId: string, deps: HookDeps): Promise<void> {
  const outcome = await sessionOutcome(event.transcriptPath);
  try {
    await deps.rpc('session.end', { sessionId: daemonSessionId, outcome });
  } catch (err) {
    deps.note('session.end not delivered; the daemon harvests the session after its idle timeout', { err: (err as Error).message, outcome });
  }
}
