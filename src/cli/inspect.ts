import type { Command } from 'commander';
import { readTranscriptFile } from '../ingest/decoder.js';
import { SessionModel } from '../model/index.js';
import type { Section } from '../model/types.js';
import { sessionIdForFile } from '../ingest/session-id.js';
import { TRANSCRIPT_FORMATS, type TranscriptFormat } from '../ingest/types.js';
import { parsePositiveInt, parseRatio, pct, printJson, printLine, usageError } from './output.js';

interface InspectFlags {
  json?: boolean;
  budget?: number;
  reserve?: number;
  format?: string;
}

/** The JSON document `contextd inspect --json` prints. */
export interface InspectReport {
  file: string;
  format: TranscriptFormat;
  sessionId: string;
  messages: number;
  sections: Pick<Section, 'id' | 'kind' | 'priority' | 'relevance' | 'recency' | 'density' | 'tokens' | 'score' | 'anchor' | 'messageRange'>[];
  /** Tokens against the budget: our count, calibrated to the agent's reports when it made any. */
  tokens: number;
  /** Our own tiktoken count of the live messages. */
  countedTokens: number;
  reportedTokens?: number;
  budget: { total: number; reserveRatio: number; source: string };
  headroom: number;
  skippedLines: number;
  malformedLines: number;
  oversizedLines: number;
  unknownLines: number;
}

/** Build the inspect report of one transcript file, offline. */
export async function inspectFile(file: string, flags: InspectFlags = {}): Promise<InspectReport> {
  if (flags.format !== undefined && !(TRANSCRIPT_FORMATS as readonly string[]).includes(flags.format)) {
    throw usageError(`--format must be one of ${TRANSCRIPT_FORMATS.join(', ')}, got "${flags.format}"`);
  }
  const read = await readTranscriptFile(file, flags.format ? { format: flags.format as TranscriptFormat } : {});
  const sessionId = sessionIdForFile(file);
  const model = new SessionModel({
    sessionId,
    ...(flags.budget !== undefined ? { budgetTokens: flags.budget } : {}),
    ...(flags.reserve !== undefined ? { reserveRatio: flags.reserve } : {}),
  });
  model.applyAll(read.events);
  const h = model.headroom();
  const b = model.budget();
  const unknown = read.counts.unknownLines + model.counts().unknownEvents;
  return {
    file,
    format: read.format,
    sessionId,
    messages: model.messages().length,
    sections: model.sections().map((s) => ({
      id: s.id,
      kind: s.kind,
      priority: s.priority,
      relevance: round(s.relevance),
      recency: s.recency,
      density: round(s.density),
      tokens: s.tokens,
      score: round(s.score),
      anchor: s.anchor,
      messageRange: s.messageRange,
    })),
    tokens: h.tokens,
    countedTokens: h.countedTokens,
    ...(h.reportedTokens !== undefined ? { reportedTokens: h.reportedTokens } : {}),
    budget: { total: b.total, reserveRatio: b.reserveRatio, source: b.source },
    headroom: round(h.headroom),
    skippedLines: read.counts.malformedLines + read.counts.oversizedLines,
    malformedLines: read.counts.malformedLines,
    oversizedLines: read.counts.oversizedLines,
    unknownLines: unknown,
  };
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

function printHuman(r: InspectReport): void {
  printLine(`${r.file}`);
  printLine(`format ${r.format}  session ${r.sessionId}  messages ${r.messages}  sections ${r.sections.length}`);
  printLine(
    `tokens ${r.tokens}${r.tokens !== r.countedTokens ? ` (counted ${r.countedTokens}, calibrated to the agent's reports)` : ''}${r.reportedTokens !== undefined ? ` (agent last reported ${r.reportedTokens})` : ''} / ${r.budget.total} (${r.budget.source})  headroom ${pct(r.headroom)}  reserve ${pct(r.budget.reserveRatio)}`,
  );
  printLine(`skipped lines ${r.skippedLines}  unknown lines ${r.unknownLines}`);
  printLine();
  printLine(`${'id'.padEnd(6)} ${'kind'.padEnd(16)} ${'priority'.padEnd(8)} ${'tokens'.padStart(7)} ${'rel'.padStart(5)} ${'rec'.padStart(5)} ${'dens'.padStart(5)} ${'score'.padStart(6)} anchor`);
  for (const s of r.sections) {
    printLine(
      `${s.id.padEnd(6)} ${s.kind.padEnd(16)} ${s.priority.padEnd(8)} ${String(s.tokens).padStart(7)} ${s.relevance.toFixed(2).padStart(5)} ${s.recency.weight.toFixed(2).padStart(5)} ${s.density.toFixed(2).padStart(5)} ${s.score.toFixed(3).padStart(6)} ${s.anchor ? 'yes' : ''}`,
    );
  }
}

/** `contextd inspect FILE [--json] [--budget N]`: sections and headroom of a transcript, offline. */
export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('show the scored sections and the headroom of a transcript, offline')
    .argument('<file>', 'a session transcript (.jsonl)')
    .option('--json', 'print one JSON document')
    .option('--budget <tokens>', 'context window in tokens (default: from the transcript\'s model, else 128000)', parsePositiveInt('--budget'))
    .option('--reserve <ratio>', 'reserve ratio (default 0.15)', parseRatio('--reserve'))
    .option('--format <format>', `force the transcript format (${TRANSCRIPT_FORMATS.join('|')})`)
    .action(async (file: string, flags: InspectFlags) => {
      const report = await inspectFile(file, flags);
      if (flags.json) printJson(report);
      else printHuman(report);
    });
}
