/**
 * Where each agent keeps its hook settings and which hooks contextd installs there.
 * - Claude Code: `~/.claude/settings.json`; UserPromptSubmit (warm bootstrap on the first
 *   prompt), PostCompact (check the summary it carries, archive the originals) and SessionStart
 *   with matcher `compact`. Claude Code 2.1.330 fires SessionStart(compact) *before* PostCompact
 *   and PostCompact cannot add context, so what the summary lost is stashed by PostCompact and
 *   injected by the next hook that can add context: PostToolUse (installed behind a shell guard
 *   that starts contextd only while something is stashed) or UserPromptSubmit,
 *   SessionEnd (`session.end`).
 * - Codex CLI: `$CODEX_HOME/hooks.json` (default `~/.codex`); UserPromptSubmit and SessionEnd.
 *   Codex 0.169 fires no SessionStart after its own compaction (its sources are startup,
 *   resume and clear) and its PostCompact hook cannot add context, so the re-injection is
 *   Claude-only (docs/integrations.md).
 */
import { existsSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentName } from './answer.js';
import { isContextdHookCommand, readSettings, shellQuote, withHooks, withoutHooks, writeSettings, type HookSpec } from './hook-settings.js';

type Env = Readonly<Record<string, string | undefined>>;

/** Seconds the agent gives one hook before it moves on without it. */
export const HOOK_TIMEOUT_SEC = 10;

export const HOOK_SPECS: Readonly<Record<AgentName, readonly HookSpec[]>> = {
  'claude-code': [
    { event: 'UserPromptSubmit', timeoutSec: HOOK_TIMEOUT_SEC },
    { event: 'PostCompact', timeoutSec: HOOK_TIMEOUT_SEC },
    { event: 'PostToolUse', timeoutSec: HOOK_TIMEOUT_SEC, onlyWhenPending: true },
    { event: 'SessionStart', matcher: 'compact', timeoutSec: HOOK_TIMEOUT_SEC },
    { event: 'SessionEnd', timeoutSec: HOOK_TIMEOUT_SEC },
  ],
  codex: [
    { event: 'UserPromptSubmit', timeoutSec: HOOK_TIMEOUT_SEC },
    { event: 'SessionEnd', timeoutSec: HOOK_TIMEOUT_SEC },
  ],
};

/** The settings file an agent reads its hooks from (respects HOME and CODEX_HOME). */
export function defaultSettingsPath(agent: AgentName, env: Env = process.env): string {
  const home = env['HOME'] ?? homedir();
  if (agent === 'claude-code') return join(home, '.claude', 'settings.json');
  return join(env['CODEX_HOME'] ?? join(home, '.codex'), 'hooks.json');
}

/**
 * Unset for the hook process: Node reads every certificate in `NODE_EXTRA_CA_CERTS` at start-up,
 * before any of our code runs (~40 ms of CPU for a system bundle of ~150 certificates), and the
 * hook makes no TLS connection. `env -u` (GNU, BSD and BusyBox env) works whatever shell the
 * agent runs the command with; an empty value would do as well in sh, but not in csh or fish.
 */
export const HOOK_UNSET_ENV = ['NODE_EXTRA_CA_CERTS'] as const;

/**
 * The launcher `contextd hook` should run: bin/contextd.js of this package (it routes `hook`
 * to the CommonJS bundle, the shortest start-up), whichever way install was started (the bin,
 * `node dist/src/cli/main.js`, or the sources under a TypeScript loader); else the running script.
 */
function hookLauncher(): string {
  // This module is dist/src/integrations/install.js when built, src/integrations/install.ts in the sources.
  const rel = /\/dist\/src\/integrations\/[^/]+$/.test(import.meta.url) ? '../../../bin/contextd.js' : '../../bin/contextd.js';
  const path = fileURLToPath(new URL(rel, import.meta.url));
  if (existsSync(path)) return realpathSync(path);
  return process.argv[1] ? realpathSync(process.argv[1]) : 'contextd';
}

/** The shell command an agent runs for one hook event (`env -u …` node launcher `hook AGENT` flags). */
export function hookCommand(agent: AgentName, flags: { socket?: string | undefined; state?: string | undefined }): string {
  const parts = ['env', ...HOOK_UNSET_ENV.flatMap((name) => ['-u', name]), process.execPath, hookLauncher(), 'hook', agent];
  if (flags.socket) parts.push('--socket', resolve(flags.socket));
  if (flags.state) parts.push('--state', resolve(flags.state));
  return parts.map(shellQuote).join(' ');
}

export interface InstallResult {
  readonly settings: string;
  readonly events: string[];
  /** contextd hooks found and removed (uninstall), or replaced (install). */
  readonly removed: number;
}

/** Merge contextd's hooks for `agent` into its settings file, running `command`. Idempotent. */
export function installHooks(agent: AgentName, settingsPath: string, command: string, stateDir: string): InstallResult {
  const doc = readSettings(settingsPath);
  const isOurs = isContextdHookCommand(agent);
  const removed = withoutHooks(doc, isOurs).removed;
  writeSettings(settingsPath, withHooks(doc, HOOK_SPECS[agent], command, isOurs, stateDir));
  return { settings: settingsPath, events: HOOK_SPECS[agent].map((s) => s.event), removed };
}

/** Remove exactly contextd's hooks for `agent`; the rest of the file is kept. */
export function uninstallHooks(agent: AgentName, settingsPath: string): InstallResult {
  const doc = readSettings(settingsPath);
  const { doc: out, removed } = withoutHooks(doc, isContextdHookCommand(agent));
  if (removed > 0) writeSettings(settingsPath, out);
  return { settings: settingsPath, events: [], removed };
}
