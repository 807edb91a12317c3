import type { Command } from 'commander';
import { Daemon } from '../daemon/daemon.js';
import { loadConfigFile, resolveDaemonOptions, type ConfigFile } from '../daemon/config.js';
import { installSignalHandlers } from '../daemon/signals.js';
import { createLogger } from '../util/logger.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { checkSocketPathLength } from '../ipc/paths.js';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { parsePositiveInt, parseRatio } from './output.js';

/** The flags of `contextd daemon` as commander parses them (undefined: not given). */
export interface DaemonFlags {
  config?: string;
  watch?: string[];
  socket?: string;
  state?: string;
  budget?: number;
  reserve?: number;
  logLevel?: string;
  proxy?: string;
  anthropicUpstream?: string;
  openaiUpstream?: string;
  proxyRecallTool?: boolean;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Config file + flags → validated options (flags win). Exported for SIGHUP reloads and tests. */
export function optionsFrom(flags: DaemonFlags, env: Readonly<Record<string, string | undefined>> = process.env) {
  const file: ConfigFile = flags.config ? loadConfigFile(flags.config) : {};
  const overrides: ConfigFile = {
    ...(flags.watch ? { watch: flags.watch } : {}),
    ...(flags.socket ? { socket: flags.socket } : {}),
    ...(flags.state ? { state: flags.state } : {}),
    ...(flags.budget !== undefined ? { budgetTokens: flags.budget } : {}),
    ...(flags.reserve !== undefined ? { reserveRatio: flags.reserve } : {}),
    ...(flags.logLevel ? { logLevel: flags.logLevel as ConfigFile['logLevel'] } : {}),
    ...proxyOverrides(file.proxy, flags),
  };
  return resolveDaemonOptions(file, overrides, env);
}

/**
 * Check the socket path before anything starts: too long for `sun_path` (exit 2), or in a
 * folder that does not exist (listen would only say EACCES or ENOENT).
 */
export function checkSocketPlace(socket: string): void {
  checkSocketPathLength(socket);
  const dir = dirname(socket);
  if (!existsSync(dir)) throw new ContextdError(ErrorCode.USAGE, `socket folder ${dir} does not exist: create it, or pass --socket in an existing folder`, { socket });
}

/** The proxy flags merged over the config file's `proxy` section (flags win, field by field). */
function proxyOverrides(file: ConfigFile['proxy'], flags: DaemonFlags): ConfigFile {
  if (flags.proxy === undefined && flags.anthropicUpstream === undefined && flags.openaiUpstream === undefined && flags.proxyRecallTool === undefined) return {};
  const upstreams = {
    ...file?.upstreams,
    ...(flags.anthropicUpstream !== undefined ? { anthropic: flags.anthropicUpstream } : {}),
    ...(flags.openaiUpstream !== undefined ? { openai: flags.openaiUpstream } : {}),
  };
  return { proxy: { ...file, ...(flags.proxy !== undefined ? { listen: flags.proxy } : {}), ...(flags.proxyRecallTool !== undefined ? { recallTool: flags.proxyRecallTool } : {}), upstreams } };
}

/** Run the daemon in the foreground until SIGTERM/SIGINT. */
export async function runDaemon(flags: DaemonFlags): Promise<void> {
  const options = optionsFrom(flags);
  checkSocketPlace(options.socketPath);
  const journald = process.env['JOURNAL_STREAM'] !== undefined;
  const logger = createLogger({ level: options.logLevel, journald });
  const daemon = new Daemon(options, { logger });
  process.on('uncaughtException', (err) => {
    logger.fatal({ err: describeError(err), stack: err.stack }, 'uncaught exception: shutting down');
    void daemon.stop('uncaughtException').finally(() => process.exit(1));
  });
  process.on('unhandledRejection', (err) => {
    logger.error({ err: describeError(err) }, 'unhandled rejection (bug): continuing');
  });
  // A closed stdout/stderr pipe (e.g. `contextd daemon | head`) must not kill the daemon.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  installSignalHandlers(
    {
      stop: (reason) => daemon.stop(reason),
      reload: () => daemon.reload(optionsFrom(flags)),
    },
    logger,
  );
  await daemon.start();
}

/** `contextd daemon [--config F] [--watch DIR]... [--socket P] [--state DIR] [--budget N] [--reserve R] [--proxy HOST:PORT] [--anthropic-upstream URL] [--openai-upstream URL] [--[no-]proxy-recall-tool]` */
export function registerDaemon(program: Command): void {
  program
    .command('daemon')
    .description('watch agent transcripts, keep headroom, serve and push compaction plans on the socket')
    .option('--config <file>', 'JSON config file (every field optional; flags win)')
    .option('--watch <dir>', 'directory or file to watch (repeatable; replaces the default list)', collect)
    .option('--socket <path>', 'Unix socket path (default $XDG_RUNTIME_DIR/contextd.sock)')
    .option('--state <dir>', 'state directory for SQLite (default $XDG_STATE_HOME/contextd)')
    .option('--budget <tokens>', 'context window in tokens for every session (default: per model)', parsePositiveInt('--budget'))
    .option('--reserve <ratio>', 'share of the window kept free (default 0.15)', parseRatio('--reserve'))
    .option('--log-level <level>', 'pino log level (default info)')
    .option('--proxy <host:port>', 'also serve the model-provider proxy here (PORT alone: 127.0.0.1:PORT)')
    .option('--anthropic-upstream <url>', 'where the proxy sends Anthropic requests (default https://api.anthropic.com)')
    .option('--openai-upstream <url>', 'where the proxy sends OpenAI requests (default https://api.openai.com)')
    .option('--proxy-recall-tool', 'offer the model a contextd_recall tool the proxy answers from the archive (changes the prompt once; off by default)')
    .option('--no-proxy-recall-tool', 'do not offer the contextd_recall tool, whatever proxy.recallTool in the config file says')
    .action(async (flags: DaemonFlags) => {
      await runDaemon(flags);
    });
}
