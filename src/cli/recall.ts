import type { Command } from 'commander';
import { Archive } from '../store/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { openStateForCli } from './state.js';
import { printJson, printLine } from './output.js';

/** `contextd recall HANDLE [--json]`: the original messages a compaction edit replaced. */
export function registerRecall(program: Command): void {
  program
    .command('recall')
    .description('print the original messages archived under a handle quoted in a summary')
    .argument('<handle>', 'archive handle, e.g. h_3f2a…')
    .option('--state <dir>', 'state directory (default $XDG_STATE_HOME/contextd)')
    .option('--json', 'print one JSON document')
    .action((handle: string, flags: { state?: string; json?: boolean }) => {
      const db = openStateForCli(flags.state);
      try {
        const entry = new Archive(db).get(handle);
        if (!entry) throw new ContextdError(ErrorCode.UNKNOWN_HANDLE, `no archived originals under "${handle}"`, { handle });
        if (flags.json) {
          printJson(entry);
          return;
        }
        printLine(`${entry.handle}  session ${entry.sessionId}  reason ${entry.reason}  sections ${entry.sectionIds.join(',')}  ${entry.tokens} tokens`);
        const redacted = entry.redactions ?? [];
        if (redacted.length > 0) printLine(`secrets redacted before archiving: ${redacted.map((r) => `${r.rule} ×${r.count}`).join(', ')}`);
        for (const m of entry.messages) {
          printLine(`--- ${m.role}${m.toolName ? ` (${m.toolName})` : ''}`);
          if (m.text) printLine(m.text);
          for (const c of m.toolCalls ?? []) printLine(`→ ${c.name} ${c.arguments}`);
        }
      } finally {
        db.close();
      }
    });
}
