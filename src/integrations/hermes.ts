/**
 * Installing the hermes-agent context engine (integrations/hermes/contextd, shipped as files in
 * the package) into `$HERMES_HOME/plugins/contextd/`, where hermes looks for user engines.
 * hermes then needs one config line, `context.engine: contextd`, to select it.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ContextdError, ErrorCode } from '../util/errors.js';

/** The engine's name: its plugin directory and the value of `context.engine`. */
export const HERMES_ENGINE_NAME = 'contextd';
/** The line to set in hermes' config.yaml. */
export const HERMES_CONFIG_LINE = `context.engine: ${HERMES_ENGINE_NAME}`;

type Env = Readonly<Record<string, string | undefined>>;

/** `--hermes-home`, else `$HERMES_HOME`, else `~/.hermes`. */
export function resolveHermesHome(flag: string | undefined, env: Env = process.env): string {
  if (flag !== undefined && flag !== '') return resolve(flag);
  const fromEnv = env['HERMES_HOME'];
  return fromEnv !== undefined && fromEnv !== '' ? resolve(fromEnv) : join(homedir(), '.hermes');
}

/** The plugin's source directory in this package (found from this module, in src/ or dist/). */
export function hermesPluginSource(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'integrations', 'hermes', HERMES_ENGINE_NAME);
    if (existsSync(join(candidate, '__init__.py'))) return candidate;
    dir = dirname(dir);
  }
  throw new ContextdError(ErrorCode.LIFECYCLE, `the hermes plugin files (integrations/hermes/${HERMES_ENGINE_NAME}) are missing from this installation of contextd`);
}

/** What an install or uninstall did. */
export interface HermesInstallResult {
  readonly pluginDir: string;
  readonly files: readonly string[];
  readonly configLine: string;
}

function pluginFiles(source: string): string[] {
  return readdirSync(source)
    .filter((f) => f.endsWith('.py') || f === 'plugin.yaml')
    .sort();
}

/** Copy the plugin into `<hermesHome>/plugins/contextd/` (an existing copy is updated). */
export function installHermes(hermesHome: string, source: string = hermesPluginSource()): HermesInstallResult {
  const pluginDir = join(hermesHome, 'plugins', HERMES_ENGINE_NAME);
  refuseForeign(pluginDir);
  mkdirSync(pluginDir, { recursive: true, mode: 0o755 });
  const files = pluginFiles(source);
  for (const f of files) copyFileSync(join(source, f), join(pluginDir, f));
  return { pluginDir, files, configLine: HERMES_CONFIG_LINE };
}

/** Remove `<hermesHome>/plugins/contextd/` if it holds our plugin. */
export function uninstallHermes(hermesHome: string): HermesInstallResult {
  const pluginDir = join(hermesHome, 'plugins', HERMES_ENGINE_NAME);
  if (!existsSync(pluginDir)) return { pluginDir, files: [], configLine: HERMES_CONFIG_LINE };
  refuseForeign(pluginDir);
  const files = readdirSync(pluginDir).sort();
  rmSync(pluginDir, { recursive: true, force: true });
  return { pluginDir, files, configLine: HERMES_CONFIG_LINE };
}

/** A plugins/contextd directory whose plugin.yaml names another plugin is not ours to touch. */
function refuseForeign(pluginDir: string): void {
  const yaml = join(pluginDir, 'plugin.yaml');
  if (!existsSync(pluginDir) || !existsSync(yaml)) return;
  const name = /^name:\s*(\S+)/m.exec(readFileSync(yaml, 'utf8'))?.[1];
  if (name !== HERMES_ENGINE_NAME) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `${pluginDir} holds another plugin (${name ?? 'no name'}); move it away or pass --hermes-home`, { pluginDir });
  }
}
