/**
 * `contextd fork`: a compacted, resumable copy of a Claude Code session or a Codex rollout,
 * written beside the original in the agent's own line format with a new session id.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ContextdError, ErrorCode } from '../../util/errors.js';
import { decodeUtf8File } from '../../ingest/bom.js';
import type { ArchiveEntry } from '../../compact/archive-entries.js';
import { claudeForkLines, newClaudeSessionId } from './claude.js';
import { codexForkLines, codexRolloutName, newCodexSessionId } from './codex.js';
import { layoutFork } from './plan.js';

export interface ForkResult {
  readonly sessionId: string;
  readonly file: string;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly edits: number;
}

function parsedLines(file: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  // A rollout written with a byte order mark keeps its first line (the session meta) too.
  for (const line of decodeUtf8File(readFileSync(file)).split('\n')) {
    if (!line.trim()) continue;
    try {
      const v: unknown = JSON.parse(line);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // A torn or foreign line: the decoder already counted it; the fork carries only parsed state.
    }
  }
  return out;
}

/**
 * Write the fork of `file` compacted to `budgetTokens`. `archive` receives the archive records
 * of every edit (secrets not yet redacted: that is the archiver's choice) and is awaited before
 * the file is written, so every handle a summary quotes can be recalled.
 */
export async function forkSession(
  file: string,
  budgetTokens: number,
  archive: (entries: readonly ArchiveEntry[]) => void | Promise<void>,
  now: Date = new Date(),
): Promise<ForkResult> {
  const layout = await layoutFork(file, budgetTokens);
  let sessionId: string;
  let out: string;
  let lines: string[];
  if (layout.format === 'claude-code') {
    sessionId = newClaudeSessionId();
    out = join(dirname(file), `${sessionId}.jsonl`);
    lines = claudeForkLines(layout, sessionId, now);
  } else if (layout.format === 'codex') {
    sessionId = newCodexSessionId(now);
    out = join(dirname(file), codexRolloutName(sessionId, now));
    lines = codexForkLines(layout, sessionId, parsedLines(file), now);
  } else {
    throw new ContextdError(ErrorCode.FORK_FAILED, `${file} is a ${layout.format} transcript; fork writes Claude Code sessions and Codex rollouts only`, { file, format: layout.format });
  }
  await archive(layout.archive);
  writeFileSync(out, `${lines.join('\n')}\n`, { mode: 0o600, flag: 'wx' });
  return { sessionId, file: out, tokensBefore: layout.tokensBefore, tokensAfter: layout.tokensAfter, edits: layout.edits.length };
}
