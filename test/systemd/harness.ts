/**
 * Offline checks of the unit files with the real `systemd-analyze` (no running systemd needed).
 *
 * - User units: `systemd-analyze --user verify <files>` with a temp HOME (so %h/.local/bin/contextd
 *   can exist as a fake launcher) and a temp XDG_RUNTIME_DIR (the user manager refuses to start
 *   without one).
 * - System template: `systemd-analyze verify --root=<tmp> contextd@alice.service …`. The root holds
 *   the template files, stub targets they depend on, and a fake /usr/local/bin/contextd, because
 *   the bare `ExecStart=contextd` (and `ExecReload=kill`) are resolved in the root's fixed
 *   search path, not $PATH.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SYSTEMD_DIR = fileURLToPath(new URL('../../systemd/', import.meta.url));
export const USER_UNITS = join(SYSTEMD_DIR, 'user');
export const SYSTEM_UNITS = join(SYSTEMD_DIR, 'system');

export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Absolute path of systemd-analyze, or a thrown error saying how to get it. */
export function requireSystemdAnalyze(): string {
  const dirs = (process.env['PATH'] ?? '').split(delimiter).concat(['/usr/bin', '/bin']);
  for (const dir of dirs) {
    const candidate = join(dir, 'systemd-analyze');
    const r = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (r.status === 0) return candidate;
  }
  throw new Error('systemd-analyze not found: install the Debian package "systemd" (.ci/run does this) to check the unit files');
}

/** Major version of the installed systemd (252 on Debian 12), or 0 when unknown. */
export function systemdMajorVersion(): number {
  const r = spawnSync(requireSystemdAnalyze(), ['--version'], { encoding: 'utf8' });
  const m = /^systemd (\d+)/.exec(r.stdout ?? '');
  return m?.[1] !== undefined ? Number(m[1]) : 0;
}

function run(cmd: string, args: readonly string[], env: Record<string, string | undefined>, cwd?: string): RunResult {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, SYSTEMD_LOG_LEVEL: 'notice', SYSTEMD_PAGER: '', SYSTEMD_COLORS: '0', ...env }, ...(cwd ? { cwd } : {}), timeout: 60_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function fakeExecutable(path: string): void {
  writeFileSync(path, '#!/bin/sh\nexit 0\n');
  chmodSync(path, 0o755);
}

/** A temp area removed by `cleanup()`. */
export interface Sandbox {
  readonly dir: string;
  cleanup(): void;
}

export function makeSandbox(): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-units-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Copy the user units into `<sandbox>/units` (or use `unitsDir` as given), make a fake launcher
 * at `$HOME/.local/bin/contextd` unless `withLauncher` is false, and run `--user verify`.
 */
export function verifyUserUnits(sandbox: Sandbox, opts: { unitsDir?: string; withLauncher?: boolean } = {}): RunResult {
  const analyze = requireSystemdAnalyze();
  const home = join(sandbox.dir, 'home');
  const runtime = join(sandbox.dir, 'run');
  mkdirSync(join(home, '.local', 'bin'), { recursive: true });
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  if (opts.withLauncher !== false) fakeExecutable(join(home, '.local', 'bin', 'contextd'));
  const unitsDir = opts.unitsDir ?? USER_UNITS;
  const files = readdirSync(unitsDir).map((f) => join(unitsDir, f));
  return run(analyze, ['--user', 'verify', '--man=no', '--recursive-errors=no', ...files], { HOME: home, XDG_RUNTIME_DIR: runtime, XDG_CONFIG_HOME: undefined, XDG_STATE_HOME: undefined });
}

/** Build a fake root holding the system template units (from `unitsDir`) for `--root=`. */
export function makeSystemRoot(sandbox: Sandbox, unitsDir: string = SYSTEM_UNITS): string {
  const root = join(sandbox.dir, 'root');
  const unitDir = join(root, 'etc', 'systemd', 'system');
  mkdirSync(unitDir, { recursive: true });
  mkdirSync(join(root, 'usr', 'local', 'bin'), { recursive: true });
  mkdirSync(join(root, 'usr', 'bin'), { recursive: true });
  fakeExecutable(join(root, 'usr', 'local', 'bin', 'contextd'));
  fakeExecutable(join(root, 'usr', 'bin', 'kill'));
  for (const f of readdirSync(unitsDir)) copyFileSync(join(unitsDir, f), join(unitDir, f));
  for (const target of ['sysinit.target', 'sockets.target', 'shutdown.target', 'basic.target', 'multi-user.target']) {
    writeFileSync(join(unitDir, target), '[Unit]\nDescription=stub for offline verification\n');
  }
  return root;
}

export function verifySystemUnits(root: string, instance = 'alice'): RunResult {
  const analyze = requireSystemdAnalyze();
  return run(analyze, ['verify', '--man=no', '--recursive-errors=no', `--root=${root}`, `contextd@${instance}.service`, `contextd@${instance}.socket`], {});
}

export interface SecurityReport {
  readonly unit: string;
  readonly exposure: number;
  readonly band: string;
  readonly raw: RunResult;
}

/** `systemd-analyze security --offline=true` on the template instance; parses the overall line. */
export function securityOfSystemUnit(root: string, instance = 'alice'): SecurityReport {
  const analyze = requireSystemdAnalyze();
  const unit = `contextd@${instance}.service`;
  const raw = run(analyze, ['security', '--offline=true', '--no-pager', `--root=${root}`, unit], {});
  const m = /Overall exposure level for (\S+): (\d+(?:\.\d+)?) ([A-Z]+)/.exec(raw.stdout);
  if (!m || m[1] === undefined || m[2] === undefined || m[3] === undefined) {
    throw new Error(`cannot find the overall exposure line in systemd-analyze security output:\n${raw.stdout}\n${raw.stderr}`);
  }
  return { unit: m[1], exposure: Number(m[2]), band: m[3], raw };
}

/** `Key=value` pairs of one section of a unit file (repeated keys keep every value). */
export function unitSection(text: string, section: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current = '';
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1] !== undefined) {
      current = header[1];
      continue;
    }
    if (current !== section) continue;
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq).trim();
    const list = out.get(key) ?? [];
    list.push(line.slice(eq + 1).trim());
    out.set(key, list);
  }
  return out;
}
