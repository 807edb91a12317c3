/**
 * `contextd compact FILE --budget N [--reserve R] [--strategy …] [--json] [--out F.jsonl]`:
 * compact a transcript offline with one strategy and show (or write) the result.
 * Exits 1, naming the blocking anchors, when the budget cannot be met without dropping anchors.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { compactWithStrategy, STRATEGIES, type CompactResult, type StrategyName } from '../compact/index.js';
import { readTranscriptFile } from '../ingest/decoder.js';
import { SessionModel } from '../model/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { parsePositiveInt, parseRatio, pct, printJson, printLine, usageError } from './output.js';

interface CompactFlags {
  budget: number;
  reserve: number;
  strategy: string;
  json?: boolean;
  out?: string;
}

function parseStrategy(value: string): StrategyName {
  if (!(STRATEGIES as readonly string[]).includes(value)) throw usageError(`--strategy must be one of ${STRATEGIES.join('|')}, got "${value}"`);
  return value as StrategyName;
}

function printHuman(file: string, r: CompactResult): void {
  printLine(`${file}: ${r.strategy}`);
  printLine(`tokens ${r.tokensBefore} → ${r.tokensAfter} (target ${r.budget}, saved ${pct(r.tokensBefore ? 1 - r.tokensAfter / r.tokensBefore : 0)})`);
  printLine(`messages out: ${r.messages.length}, edits: ${r.edits.length}`);
  if (r.edits.length > 0) {
    printLine('');
    printLine(`${'edit'.padEnd(22)} ${'reason'.padEnd(22)} ${'sections'.padStart(8)} ${'before'.padStart(8)} ${'after'.padStart(7)}`);
    for (const e of r.edits) {
      printLine(`${e.editId.slice(0, 22).padEnd(22)} ${e.reason.padEnd(22)} ${String(e.replaces.length).padStart(8)} ${String(e.tokensBefore).padStart(8)} ${String(e.tokensAfter).padStart(7)}`);
    }
  }
  if (r.unreachable) printLine(`\nunreachable: anchors ${r.unreachable.anchors.join(', ')} stand in the way (${r.unreachable.anchorTokens} anchor tokens)`);
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
    .option('--out <file>', 'write the compacted messages as openai-chat JSONL')
    .action(async (file: string, flags: CompactFlags) => {
      const strategy = parseStrategy(flags.strategy);
      const transcript = await readTranscriptFile(file);
      const model = new SessionModel({ sessionId: file, budgetTokens: flags.budget, reserveRatio: flags.reserve });
      model.applyAll(transcript.events);
      const result = await compactWithStrategy(model, { strategy, budgetTokens: flags.budget, reserveRatio: flags.reserve });
      if (flags.out) writeFileSync(flags.out, result.messages.map((m) => JSON.stringify(m)).join('\n') + (result.messages.length ? '\n' : ''));
      if (flags.json) printJson({ file, format: transcript.format, ...result });
      else printHuman(file, result);
      if (result.unreachable) {
        throw new ContextdError(
          ErrorCode.BUDGET_UNREACHABLE,
          `budget ${flags.budget} (target ${result.budget} tokens) cannot be met: anchors ${result.unreachable.anchors.join(', ')} stand in the way (${result.tokensAfter} tokens after compaction)`,
          { anchors: result.unreachable.anchors, anchorTokens: result.unreachable.anchorTokens },
        );
      }
    });
}
