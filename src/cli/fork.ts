/**
 * `contextd fork FILE --budget N [--state DIR] [--json]`: a compacted copy of a Claude Code
 * session or Codex rollout beside the original, resumable with `claude --resume ID` /
 * `codex resume ID`; the replaced originals are archived in the state dir, secrets redacted
 * (the CLI reads no config file: `archive.redactSecrets` is at its default, on).
 */
import type { Command } from 'commander';
import { redactEntries } from '../compact/archive-entries.js';
import { redactMessages } from '../harvest/redact.js';
import { forkSession } from '../integrations/fork/index.js';
import { Archive } from '../store/archive.js';
import { openStateForCli } from './state.js';
import { parsePositiveInt, printJson, printLine } from './output.js';

interface ForkFlags {
  budget: number;
  state?: string;
  json?: boolean;
}

/** Register `fork` on the program. */
export function registerFork(program: Command): void {
  program
    .command('fork')
    .description("write a compacted, resumable copy of a Claude Code session or Codex rollout in the agent's own format")
    .argument('<file>', 'Claude Code session (.jsonl) or Codex rollout')
    .requiredOption('--budget <n>', 'token budget the copy must fit', parsePositiveInt('--budget'))
    .option('--state <dir>', 'state dir where the replaced originals are archived')
    .option('--json', 'print {sessionId, file, tokensBefore, tokensAfter, edits}')
    .action(async (file: string, flags: ForkFlags) => {
      const db = openStateForCli(flags.state, { create: true });
      try {
        const archive = new Archive(db);
        const r = await forkSession(file, flags.budget, async (entries) => archive.putMany(await redactEntries(entries, redactMessages)));
        if (flags.json) printJson(r);
        else {
          printLine(`forked ${file}`);
          printLine(`  -> ${r.file}`);
          printLine(`session ${r.sessionId}: ${r.tokensBefore} -> ${r.tokensAfter} tokens, ${r.edits} edits`);
        }
      } finally {
        db.close();
      }
    });
}
