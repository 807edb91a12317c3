/**
 * `contextd compact FILE --budget N [--reserve R] [--strategy …] [--json] [--out F.jsonl] [--state DIR]`:
 * compact a transcript offline with one strategy and show (or write) the result. The budget
 * counts what `inspect` counts (calibrated to the agent's usage reports); the originals of
 * every summary are archived under `--state` so the handles it quotes resolve.
 * Exits 1, naming the blocking anchors, when the budget cannot be met without dropping anchors;
 * `--out` is then not written (an existing file is left as it was): a file that does not fit
 * the budget is no result, and a script that skips the exit code must not take it for one.
 * The `--out` file is owner-only (0600, an existing one tightened): summaries may quote secrets.
 */
import type { Command } from 'commander';
import { archiveEntries, compactWithStrategy, redactEntries, STRATEGIES, type CompactResult, type StrategyName } from '../compact/index.js';
import { readTranscriptFile } from '../ingest/decoder.js';
import { sessionIdForFile } from '../ingest/session-id.js';
import { redactMessages } from '../harvest/redact.js';
import { Archive } from '../store/index.js';
import { openStateForCli } from './state.js';
import { SessionModel } from '../model/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { writePrivateFileSync } from '../util/atomic-write.js';
import { parsePositiveInt, parseRatio, pct, printJson, printLine, usageError } from './output.js';

interface CompactFlags {
  budget: number;
  reserve: number;
  strategy: string;
  json?: boolean;
  out?: string;
  state?: string;
}

/**
 * Archive the originals of every edit whose summary quotes a recall handle, so `contextd
 * recall h_…` (same `--state`) returns them, secrets redacted (`archive.redactSecrets` at its
 * default: the CLI reads no config file). Returns how many were archived.
 */
async function archiveOriginals(model: SessionModel, result: CompactResult, stateDir: string | undefined): Promise<number> {
  const entries = await redactEntries(archiveEntries(model, result.edits, { sessionId: model.sessionId, createdAt: Date.now() }), redactMessages);
  if (entries.length === 0) return 0;
  const db = openStateForCli(stateDir, { create: true });
  try {
    new Archive(db).putMany(entries);
  } finally {
    db.close();
  }
  return entries.length;
}

function parseStrategy(value: string): StrategyName {
  if (!(STRATEGIES as readonly string[]).includes(value)) throw usageError(`--strategy must be one of ${STRATEGIES.join('|')}, got "${value}"`);
  return value as StrategyName;
}

function printHuman(file: string, r: CompactResult, archived: number, stateDir: string | undefined): void {
  printLine(`${file}: ${r.strategy}`);
  const calibrated = r.tokensBefore !== r.countedTokensBefore;
  printLine(
    `tokens ${r.tokensBefore} → ${r.tokensAfter} (target ${r.budget}, saved ${pct(r.tokensBefore ? 1 - r.tokensAfter / r.tokensBefore : 0)})${calibrated ? ` — reported (calibrated to the agent's usage); counted ${r.countedTokensBefore} → ${r.countedTokensAfter}` : ''}`,
  );
  if (archived > 0) printLine(`archived ${archived} original${archived === 1 ? '' : 's'} under their recall handles in ${stateDir ?? 'the default state dir'}`);
  printLine(`messages out: ${r.messages.length}, edits: ${r.edits.length}`);
  if (r.edits.length > 0) {
    printLine('');
    printLine(`${'edit'.padEnd(22)} ${'reason'.padEnd(22)} ${'sections'.padStart(8)} ${'before'.padStart(8)} ${'after'.padStart(7)}`);
    for (const e of r.edits) {
      printLine(`${e.editId.slice(0, 22).padEnd(22)} ${e.reason.padEnd(22)} ${String(e.replaces.length).padStart(8)} ${String(e.tokensBefore).padStart(8)} ${String(e.tokensAfter).padStart(7)}`);
    }
  }
  if (r.unreachable) printLine(`\nunreachable: ${unreachableReason(r.unreachable)}`);
}

/** Why a budget cannot be met, in words a person can act on. */
function unreachableReason(u: NonNullable<CompactResult['unreachable']>): string {
  const parts: string[] = [];
  if (u.anchors.length > 0) parts.push(`anchors ${u.anchors.join(', ')} stand in the way (${u.anchorTokens} anchor tokens)`);
  if (u.overheadTokens !== undefined) parts.push(`the agent's own context (system prompt, tool definitions) takes ${u.overheadTokens} tokens by its usage reports`);
  return parts.length > 0 ? parts.join('; ') : 'what must stay does not fit';
}

/** Register `compact` on the program. */
export function registerCompact(program: Command): void {
  program
    .command('compact')
    .description('Compact a transcript offline to a token budget and print the plan or the compacted context')
    .argument('<file>', 'transcript file (claude-code, codex or openai-chat JSONL)')
    .requiredOption('--budget <n>', 'context window to fit, in tokens', parsePositiveInt('--budget'))
    .option('--reserve <r>', 'share of the window kept free', parseRatio('--reserve'), 0.15)
    .option('--strategy <name>', `one of ${STRATEGIES.join('|')}`, 'contextd')
    .option('--json', 'print one JSON document')
    .option('--out <file>', 'write the compacted messages as openai-chat JSONL (owner-only; not written when the budget is unreachable)')
    .option('--state <dir>', 'state directory where originals are archived for `contextd recall` (default $XDG_STATE_HOME/contextd)')
    .action(async (file: string, flags: CompactFlags) => {
      const strategy = parseStrategy(flags.strategy);
      const transcript = await readTranscriptFile(file);
      const model = new SessionModel({ sessionId: sessionIdForFile(file), budgetTokens: flags.budget, reserveRatio: flags.reserve });
      model.applyAll(transcript.events);
      const result = await compactWithStrategy(model, { strategy, budgetTokens: flags.budget, reserveRatio: flags.reserve });
      // every handle a summary quotes must resolve: archive before anything is printed or written
      const archived = await archiveOriginals(model, result, flags.state);
      if (flags.out && !result.unreachable) writePrivateFileSync(flags.out, result.messages.map((m) => JSON.stringify(m)).join('\n') + (result.messages.length ? '\n' : ''));
      if (flags.json) printJson({ file, format: transcript.format, ...result, archived });
      else printHuman(file, result, archived, flags.state);
      if (result.unreachable) {
        throw new ContextdError(
          ErrorCode.BUDGET_UNREACHABLE,
          `budget ${flags.budget} (target ${result.budget} tokens) cannot be met: ${unreachableReason(result.unreachable)} (${result.tokensAfter} tokens after compaction)`,
          { ...result.unreachable },
        );
      }
    });
}
