/**
 * `contextd install claude-code|codex [--settings F] [--socket P] [--state DIR]` and
 * `contextd uninstall claude-code|codex [--settings F]`: add or remove contextd's hooks in the
 * agent's settings. The hook command runs this same contextd (the node binary and script now
 * running) with the given socket and state dir.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { AGENTS, type AgentName } from '../integrations/answer.js';
import { shellQuote } from '../integrations/hook-settings.js';
import { defaultSettingsPath, installHooks, uninstallHooks } from '../integrations/install.js';
import { printJson, printLine, usageError } from './output.js';

interface InstallFlags {
  settings?: string;
  socket?: string;
  state?: string;
  json?: boolean;
}

function parseAgent(value: string): AgentName {
  if (!(AGENTS as readonly string[]).includes(value)) throw usageError(`agent must be one of ${AGENTS.join('|')}, got "${value}"`);
  return value as AgentName;
}

/** The shell command an agent runs for one hook event. */
export function hookCommand(agent: AgentName, flags: { socket?: string | undefined; state?: string | undefined }): string {
  const script = process.argv[1] ? realpathSync(process.argv[1]) : 'contextd';
  const parts = [process.execPath, script, 'hook', agent];
  if (flags.socket) parts.push('--socket', resolve(flags.socket));
  if (flags.state) parts.push('--state', resolve(flags.state));
  return parts.map(shellQuote).join(' ');
}

/** Register `install` and `uninstall` on the program. */
export function registerInstall(program: Command): void {
  program
    .command('install')
    .description(`add contextd's hooks to an agent's settings (${AGENTS.join('|')}); idempotent, keeps the user's own hooks`)
    .argument('<agent>', AGENTS.join('|'), parseAgent)
    .option('--settings <file>', 'settings file (default: ~/.claude/settings.json, or $CODEX_HOME/hooks.json)')
    .option('--socket <path>', 'daemon socket the hook talks to')
    .option('--state <dir>', 'state dir the hook falls back to and archives into')
    .option('--json', 'print one JSON document')
    .action((agent: AgentName, flags: InstallFlags) => {
      const settings = resolve(flags.settings ?? defaultSettingsPath(agent));
      const r = installHooks(agent, settings, hookCommand(agent, flags));
      if (flags.json) printJson(r);
      else printLine(`installed contextd hooks (${r.events.join(', ')}) in ${r.settings}`);
    });
  program
    .command('uninstall')
    .description("remove exactly contextd's hooks from an agent's settings")
    .argument('<agent>', AGENTS.join('|'), parseAgent)
    .option('--settings <file>', 'settings file (default as for install)')
    .option('--json', 'print one JSON document')
    .action((agent: AgentName, flags: InstallFlags) => {
      const r = uninstallHooks(agent, resolve(flags.settings ?? defaultSettingsPath(agent)));
      if (flags.json) printJson(r);
      else printLine(r.removed > 0 ? `removed ${r.removed} contextd hooks from ${r.settings}` : `no contextd hooks in ${r.settings}`);
    });
  program
    .command('hook')
    .description('answer one agent hook event (JSON on stdin) in the agent\'s hook format; never fails the agent')
    .argument('<agent>', AGENTS.join('|'))
    .allowUnknownOption(true)
    .helpOption(false)
    .argument('[flags...]', '--socket P --state DIR --budget N --timeout-ms MS')
    .action(async (agent: string, rest: string[]) => {
      const { hookMain } = await import('./hook.js');
      process.exitCode = await hookMain([agent, ...rest]);
    });
}
