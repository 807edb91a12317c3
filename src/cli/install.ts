/**
 * `contextd install hermes [--hermes-home DIR] [--json]` and `contextd uninstall hermes …`:
 * put the hermes context engine where hermes looks for user engines, and print the one config
 * line that selects it.
 */
import type { Command } from 'commander';
import { HERMES_CONFIG_LINE, installHermes, resolveHermesHome, uninstallHermes } from '../integrations/hermes.js';
import { printJson, printLine, usageError } from './output.js';

interface InstallFlags {
  hermesHome?: string;
  json?: boolean;
}

const AGENTS = ['hermes'] as const;

function checkAgent(agent: string): void {
  if (!(AGENTS as readonly string[]).includes(agent)) throw usageError(`unknown agent "${agent}": one of ${AGENTS.join(', ')}`);
}

/** Register `install` and `uninstall`. */
export function registerInstall(program: Command): void {
  program
    .command('install')
    .description('install contextd into an agent (hermes: the context-engine plugin)')
    .argument('<agent>', AGENTS.join('|'))
    .option('--hermes-home <dir>', 'hermes home (default $HERMES_HOME, else ~/.hermes)')
    .option('--json', 'print one JSON document')
    .action((agent: string, flags: InstallFlags) => {
      checkAgent(agent);
      const r = installHermes(resolveHermesHome(flags.hermesHome));
      if (flags.json) {
        printJson(r);
        return;
      }
      printLine(`installed the contextd context engine in ${r.pluginDir} (${r.files.join(', ')})`);
      printLine(`select it in hermes' config.yaml with:`);
      printLine(`  ${HERMES_CONFIG_LINE}`);
    });
  program
    .command('uninstall')
    .description('remove what `contextd install` put into an agent')
    .argument('<agent>', AGENTS.join('|'))
    .option('--hermes-home <dir>', 'hermes home (default $HERMES_HOME, else ~/.hermes)')
    .option('--json', 'print one JSON document')
    .action((agent: string, flags: InstallFlags) => {
      checkAgent(agent);
      const r = uninstallHermes(resolveHermesHome(flags.hermesHome));
      if (flags.json) {
        printJson(r);
        return;
      }
      printLine(r.files.length > 0 ? `removed ${r.pluginDir}` : `nothing installed at ${r.pluginDir}`);
      printLine(`remove \`${HERMES_CONFIG_LINE}\` from hermes' config.yaml (hermes falls back to its own compressor)`);
    });
}
