/**
 * `contextd install claude-code|codex [--settings F] [--socket P] [--state DIR]` and
 * `contextd uninstall claude-code|codex [--settings F]`: add or remove contextd's hooks in the
 * agent's settings. The hook command (integrations/install.ts `hookCommand`) runs this package's
 * launcher with the node binary now running and the given socket and state dir.
 * `contextd install hermes [--hermes-home DIR]` (and `uninstall hermes`): put the hermes context
 * engine in `$HERMES_HOME/plugins/contextd/` and print the one config line that selects it.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { AGENTS } from '../integrations/answer.js';
import { defaultSettingsPath, hookCommand, installHooks, uninstallHooks } from '../integrations/install.js';
import { resolveStateDir } from '../store/paths.js';
import { HERMES_CONFIG_LINE, installHermes, resolveHermesHome, uninstallHermes } from '../integrations/hermes.js';
import { printJson, printLine, usageError } from './output.js';

interface InstallFlags {
  hermesHome?: string;
  settings?: string;
  socket?: string;
  state?: string;
  json?: boolean;
}

/** What `install` can install into: the hook agents, and hermes (a context-engine plugin). */
const TARGETS = [...AGENTS, 'hermes'] as const;
type Target = (typeof TARGETS)[number];

function parseAgent(value: string): Target {
  if (!(TARGETS as readonly string[]).includes(value)) throw usageError(`agent must be one of ${TARGETS.join('|')}, got "${value}"`);
  return value as Target;
}

function installHermesCli(flags: InstallFlags): void {
  const r = installHermes(resolveHermesHome(flags.hermesHome));
  if (flags.json) {
    printJson(r);
    return;
  }
  printLine(`installed the contextd context engine in ${r.pluginDir} (${r.files.join(', ')})`);
  printLine(`select it in hermes' config.yaml with:`);
  printLine(`  ${HERMES_CONFIG_LINE}`);
}

function uninstallHermesCli(flags: InstallFlags): void {
  const r = uninstallHermes(resolveHermesHome(flags.hermesHome));
  if (flags.json) {
    printJson(r);
    return;
  }
  printLine(r.files.length > 0 ? `removed ${r.pluginDir}` : `nothing installed at ${r.pluginDir}`);
  printLine(`remove \`${HERMES_CONFIG_LINE}\` from hermes' config.yaml (hermes falls back to its own compressor)`);
}

/** Register `install` and `uninstall` on the program. */
export function registerInstall(program: Command): void {
  program
    .command('install')
    .description(`add contextd's hooks to an agent's settings (${AGENTS.join('|')}; idempotent, keeps the user's own hooks), or its context engine to hermes`)
    .argument('<agent>', TARGETS.join('|'), parseAgent)
    .option('--settings <file>', 'settings file (default: ~/.claude/settings.json, or $CODEX_HOME/hooks.json)')
    .option('--socket <path>', 'daemon socket the hook talks to')
    .option('--state <dir>', 'state dir the hook falls back to and archives into')
    .option('--hermes-home <dir>', 'hermes: its home (default $HERMES_HOME, else ~/.hermes)')
    .option('--json', 'print one JSON document')
    .action((agent: Target, flags: InstallFlags) => {
      if (agent === 'hermes') return installHermesCli(flags);
      const settings = resolve(flags.settings ?? defaultSettingsPath(agent));
      const r = installHooks(agent, settings, hookCommand(agent, flags), resolveStateDir(flags.state));
      if (flags.json) printJson(r);
      else printLine(`installed contextd hooks (${r.events.join(', ')}) in ${r.settings}`);
    });
  program
    .command('uninstall')
    .description("remove exactly contextd's hooks from an agent's settings, or its engine from hermes")
    .argument('<agent>', TARGETS.join('|'), parseAgent)
    .option('--settings <file>', 'settings file (default as for install)')
    .option('--hermes-home <dir>', 'hermes: its home (default $HERMES_HOME, else ~/.hermes)')
    .option('--json', 'print one JSON document')
    .action((agent: Target, flags: InstallFlags) => {
      if (agent === 'hermes') return uninstallHermesCli(flags);
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
