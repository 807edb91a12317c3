import type { Command } from 'commander';
import { HeadroomLog } from '../store/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { openStateForCli } from './state.js';
import { pct, printJson, printLine, usageError } from './output.js';

interface HeadroomFlags {
  since?: string;
  json?: boolean;
  state?: string;
}

/** Parse `--since`: an ISO time, epoch ms, or a duration back from now (`90s`, `15m`, `2h`, `1d`). */
export function parseSince(value: string, now = Date.now()): number {
  const rel = /^(\d+)(s|m|h|d)$/.exec(value);
  if (rel) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as 's' | 'm' | 'h' | 'd'];
    return now - Number(rel[1]) * unit;
  }
  if (/^\d+$/.test(value)) return Number(value);
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw usageError(`--since takes an ISO time, epoch ms or a duration like 15m, got "${value}"`);
  return t;
}

/** `contextd headroom SESSION [--since T] [--json]`: the headroom log from SQLite. */
export function registerHeadroom(program: Command): void {
  program
    .command('headroom')
    .description('print the headroom log of a session from the state database')
    .argument('<session>', 'session id (see `contextd status`)')
    .option('--since <time>', 'only samples since an ISO time, epoch ms, or a duration (15m, 2h)')
    .option('--state <dir>', 'state directory (default $XDG_STATE_HOME/contextd)')
    .option('--json', 'print one JSON document')
    .action((session: string, flags: HeadroomFlags) => {
      const since = flags.since !== undefined ? parseSince(flags.since) : 0;
      const db = openStateForCli(flags.state);
      try {
        const log = new HeadroomLog(db);
        const samples = log.list(session, since);
        if (samples.length === 0 && (since === 0 || log.list(session, 0).length === 0)) {
          throw new ContextdError(ErrorCode.UNKNOWN_SESSION, `no headroom samples for session ${session}: no such session in this state directory (see \`contextd status\`)`, { session });
        }
        if (flags.json) {
          printJson({ sessionId: session, since, samples });
          return;
        }
        if (samples.length === 0) {
          printLine(`no headroom samples for session ${session} in that window`);
          return;
        }
        printLine(`${'time'.padEnd(24)} ${'tokens'.padStart(9)} ${'total'.padStart(9)} ${'headroom'.padStart(8)} ${'sections'.padStart(8)}  reason`);
        for (const s of samples) {
          printLine(`${new Date(s.at).toISOString().padEnd(24)} ${String(s.tokens).padStart(9)} ${String(s.total).padStart(9)} ${pct(s.headroom).padStart(8)} ${String(s.sections).padStart(8)}  ${s.reason}`);
        }
      } finally {
        db.close();
      }
    });
}
