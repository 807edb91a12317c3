import { Command, CommanderError } from 'commander';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { ExitCode } from './output.js';
import { VERSION } from '../version.js';
import { COMMANDS } from './commands.js';

/**
 * One exit-code policy (design §7): 2 when the command line or config is wrong, 1 for
 * everything that goes wrong at run time — including ids that name nothing (an unknown
 * template, handle or session), which are facts about the state, not about the usage.
 */
const USAGE_CODES: ReadonlySet<string> = new Set([ErrorCode.USAGE, ErrorCode.CONFIG_INVALID, ErrorCode.SOCKET_PATH_TOO_LONG]);

/** Build the `contextd` command tree. Each subcommand lives in its own file under src/cli/. */
export function buildProgram(): Command {
  const program = new Command('contextd')
    .description('Context-compaction sidecar for LLM agents: tails session transcripts, keeps token headroom, pushes compaction plans over a Unix socket.')
    .version(VERSION)
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  for (const register of COMMANDS) register(program);
  return program;
}

/** Run the CLI with `argv` (as in process.argv) and resolve to the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return ExitCode.OK;
      if (err.code === 'commander.executeSubCommandAsync') return ExitCode.OK;
      return ExitCode.USAGE;
    }
    if (err instanceof ContextdError) {
      process.stderr.write(`contextd: ${err.message}\n`);
      return USAGE_CODES.has(err.code) ? ExitCode.USAGE : ExitCode.RUNTIME;
    }
    process.stderr.write(`contextd: ${describeError(err)}\n`);
    return ExitCode.RUNTIME;
  }
}

