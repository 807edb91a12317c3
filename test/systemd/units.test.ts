import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  SYSTEM_UNITS,
  USER_UNITS,
  makeSandbox,
  makeSystemRoot,
  requireSystemdAnalyze,
  systemdMajorVersion,
  securityOfSystemUnit,
  unitSection,
  verifySystemUnits,
  verifyUserUnits,
  type Sandbox,
} from './harness.js';

/**
 * Exposure of systemd/system/contextd@.service as measured, per systemd major version; it must
 * not get worse. Other versions weigh a few checks differently: there the unit must stay in
 * the SAFE band (< 1.0).
 */
const MEASURED_EXPOSURE: Readonly<Record<number, number>> = { 252: 0.4 };
const MAX_SYSTEM_EXPOSURE = MEASURED_EXPOSURE[systemdMajorVersion()] ?? 0.9;

const sandboxes: Sandbox[] = [];
function sandbox(): Sandbox {
  const s = makeSandbox();
  sandboxes.push(s);
  return s;
}
afterEach(() => {
  for (const s of sandboxes.splice(0)) s.cleanup();
});

const read = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8');

describe('systemd-analyze is available', () => {
  it('is installed (the unit checks below need it; CI installs the "systemd" package)', () => {
    expect(requireSystemdAnalyze()).toMatch(/systemd-analyze$/);
  });
});

describe('user units (systemctl --user)', () => {
  it('pass `systemd-analyze --user verify` without a single warning', () => {
    const r = verifyUserUnits(sandbox());
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('the check catches a unit whose launcher is missing (the verification can fail)', () => {
    const r = verifyUserUnits(sandbox(), { withLauncher: false });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/contextd\.service: Command .*\.local\/bin\/contextd is not executable/);
  });

  it('the check reports an unknown directive', () => {
    const s = sandbox();
    const units = join(s.dir, 'units');
    mkdirSync(units);
    for (const f of readdirSync(USER_UNITS)) copyFileSync(join(USER_UNITS, f), join(units, f));
    const service = join(units, 'contextd.service');
    writeFileSync(service, readFileSync(service, 'utf8').replace(/^\[Service\]$/m, '[Service]\nProtectSystm=strict'));
    const r = verifyUserUnits(s, { unitsDir: units });
    expect(r.stderr).toMatch(/Unknown key 'ProtectSystm'/);
  });

  it('notify + watchdog, socket path and places agree with the design', () => {
    const service = unitSection(read(USER_UNITS, 'contextd.service'), 'Service');
    const socket = unitSection(read(USER_UNITS, 'contextd.socket'), 'Socket');
    expect(service.get('Type')).toEqual(['notify']);
    expect(service.get('NotifyAccess')).toEqual(['all']);
    expect(service.get('WatchdogSec')).toEqual(['30s']);
    expect(service.get('ReadWritePaths')).toEqual(['%h/.local/state/contextd']);
    expect(service.get('ExecStartPre')).toEqual(['+mkdir -p -m 0700 %h/.local/state/contextd']);
    expect(service.get('RuntimeDirectory')).toEqual(['contextd']);
    expect(service.get('RuntimeDirectoryPreserve')).toEqual(['yes']);
    expect(socket.get('ListenStream')).toEqual(['%t/contextd/contextd.sock']);
    expect(socket.get('SocketMode')).toEqual(['0600']);
    const exec = service.get('ExecStart')?.[0] ?? '';
    expect(exec).toContain(' daemon ');
    expect(exec).toContain('--socket %t/contextd/contextd.sock');
    expect(exec).toContain('--state %h/.local/state/contextd');
    expect(service.has('MemoryDenyWriteExecute')).toBe(false);
  });

  it('uses no option a user manager cannot apply', () => {
    const service = unitSection(read(USER_UNITS, 'contextd.service'), 'Service');
    // systemd.exec(5): "only available for system services and is not supported for services
    // running in per-user instances of the service manager".
    for (const key of ['User', 'Group', 'DynamicUser', 'ProtectControlGroups', 'ProtectProc', 'ProcSubset', 'RemoveIPC', 'RootImage', 'LogNamespace', 'SupplementaryGroups']) {
      expect(service.has(key), key).toBe(false);
    }
    // The mount sandbox only exists in a user manager inside a user namespace.
    expect(service.get('PrivateUsers')).toEqual(['yes']);
  });
});

describe('system template (contextd@.service)', () => {
  it('passes `systemd-analyze verify` for an instance, without a single warning', () => {
    const root = makeSystemRoot(sandbox());
    const r = verifySystemUnits(root, 'alice');
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('the check fails when the launcher is not in the search path', () => {
    const s = sandbox();
    const root = makeSystemRoot(s);
    rmSync(join(root, 'usr', 'local', 'bin', 'contextd'));
    const r = verifySystemUnits(root, 'alice');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/contextd@alice\.service: Command contextd is not executable/);
  });

  it(`scores SAFE in systemd-analyze security, exposure ≤ ${MAX_SYSTEM_EXPOSURE}`, () => {
    const root = makeSystemRoot(sandbox());
    const report = securityOfSystemUnit(root, 'alice');
    expect(report.unit).toBe('contextd@alice.service');
    expect(report.band).toMatch(/^(SAFE|PERFECT)$/);
    expect(report.exposure).toBeLessThanOrEqual(MAX_SYSTEM_EXPOSURE);
  });

  it('the security check notices a weaker unit', () => {
    const s = sandbox();
    const weak = join(s.dir, 'weak');
    mkdirSync(weak);
    for (const f of readdirSync(SYSTEM_UNITS)) copyFileSync(join(SYSTEM_UNITS, f), join(weak, f));
    const service = join(weak, 'contextd@.service');
    writeFileSync(service, readFileSync(service, 'utf8').replace(/^PrivateNetwork=yes$/m, 'PrivateNetwork=no').replace(/^CapabilityBoundingSet=$/m, ''));
    const report = securityOfSystemUnit(makeSystemRoot(s, weak), 'alice');
    expect(report.exposure).toBeGreaterThan(MAX_SYSTEM_EXPOSURE);
  });

  it('runs as the instance user with the per-user places of the design', () => {
    const service = unitSection(read(SYSTEM_UNITS, 'contextd@.service'), 'Service');
    const socket = unitSection(read(SYSTEM_UNITS, 'contextd@.socket'), 'Socket');
    expect(service.get('User')).toEqual(['%i']);
    expect(service.has('DynamicUser')).toBe(false);
    expect(service.get('StateDirectory')).toEqual(['contextd/%i']);
    expect(socket.get('ListenStream')).toEqual(['/run/contextd/%i.sock']);
    expect(socket.get('SocketUser')).toEqual(['%i']);
    expect(service.get('ExecStart')?.[0]).toContain('--socket /run/contextd/%i.sock');
    const ro = (service.get('BindReadOnlyPaths') ?? []).join(' ');
    for (const dir of ['.claude/projects', '.codex/sessions', '.hermes/sessions']) expect(ro).toContain(`-/home/%i/${dir}`);
    expect(service.has('MemoryDenyWriteExecute')).toBe(false);
  });
});
