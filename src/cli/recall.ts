import type { Command } from 'commander';
import { Archive, archivedText, type ArchivedMessage } from '../store/index.js';
import { MAX_SEARCH_LIMIT } from '../ipc/protocol.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { openStateForCli } from './state.js';
import { parsePositiveInt, printJson, printLine, usageError } from './output.js';

interface RecallFlags {
  state?: string;
  json?: boolean;
  search?: string;
  session?: string;
  limit?: number;
}

/**
 * `contextd recall HANDLE [--json]`: the original messages a compaction edit replaced;
 * `contextd recall --search "query" [--session ID] [--limit N]`: archived originals ranked by
 * how well they match the query (what `archive.search` answers over the socket).
 */
export function registerRecall(program: Command): void {
  program
    .command('recall')
    .description('print the original messages archived under a handle quoted in a summary, or search the archive')
    .argument('[handle]', 'archive handle, e.g. h_3f2a…')
    .option('--search <query>', 'search archived originals by what they are about (best match first)')
    .option('--session <id>', 'with --search: only this session')
    .option('--limit <n>', `with --search: most hits (default 5, at most ${MAX_SEARCH_LIMIT})`, parsePositiveInt('--limit'))
    .option('--state <dir>', 'state directory (default $XDG_STATE_HOME/contextd)')
    .option('--json', 'print one JSON document')
    .action((handle: string | undefined, flags: RecallFlags) => {
      if ((handle === undefined) === (flags.search === undefined)) throw usageError('give either a HANDLE or --search "query"');
      if (flags.search === undefined && (flags.session !== undefined || flags.limit !== undefined)) throw usageError('--session and --limit go with --search');
      if (flags.limit !== undefined && flags.limit > MAX_SEARCH_LIMIT) throw usageError(`--limit must be at most ${MAX_SEARCH_LIMIT}, got ${flags.limit}`);
      const db = openStateForCli(flags.state);
      try {
        const archive = new Archive(db);
        if (flags.search !== undefined) search(archive, flags.search, flags);
        else show(archive, handle as string, flags.json === true);
      } finally {
        db.close();
      }
    });
}

function show(archive: Archive, handle: string, json: boolean): void {
  const entry = archive.get(handle);
  if (!entry) throw new ContextdError(ErrorCode.UNKNOWN_HANDLE, `no archived originals under "${handle}"`, { handle });
  if (json) {
    printJson(entry);
    return;
  }
  printLine(`${entry.handle}  session ${entry.sessionId}  reason ${entry.reason}  sections ${entry.sectionIds.join(',')}  ${entry.tokens} tokens`);
  const redacted = entry.redactions ?? [];
  if (redacted.length > 0) printLine(`secrets redacted before archiving: ${redacted.map((r) => `${r.rule} ×${r.count}`).join(', ')}`);
  printMessages(entry.messages);
}

function search(archive: Archive, query: string, flags: RecallFlags): void {
  const hits = archive.search(query, { sessionId: flags.session, limit: flags.limit ?? 5 });
  if (flags.json) {
    printJson({ hits });
    return;
  }
  if (hits.length === 0) {
    printLine(`no archived originals match ${JSON.stringify(query)}`);
    return;
  }
  for (const h of hits) {
    printLine(`${h.handle}  session ${h.sessionId}  score ${h.score.toFixed(2)}  reason ${h.reason}`);
    printMessages(h.messages);
    printLine();
  }
}

function printMessages(messages: readonly ArchivedMessage[]): void {
  if (messages.length > 0) printLine(archivedText(messages));
}
