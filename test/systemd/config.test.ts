import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, loadConfigFile, resolveDaemonOptions } from '../../src/daemon/config.js';
import { SYSTEM_UNITS, USER_UNITS, unitSection } from './harness.js';

const EXAMPLE = fileURLToPath(new URL('../../systemd/contextd.json', import.meta.url));

describe('systemd/contextd.json (the example config the units point at)', () => {
  it('is accepted by the daemon config schema (strict: no misspelled field)', () => {
    const file = loadConfigFile(EXAMPLE);
    expect(Object.keys(file).sort()).toEqual(Object.keys(JSON.parse(readFileSync(EXAMPLE, 'utf8')) as object).sort());
  });

  it('spells out the defaults, so copying it changes nothing until edited', () => {
    const env = { HOME: '/home/alice', XDG_RUNTIME_DIR: '/run/user/1000' };
    const fromExample = resolveDaemonOptions(loadConfigFile(EXAMPLE), {}, env);
    const fromNothing = resolveDaemonOptions({}, {}, env);
    expect(fromExample.reserveRatio).toBe(DEFAULTS.reserveRatio);
    expect(fromExample.softWatermark).toBe(DEFAULTS.softWatermark);
    expect(fromExample.hysteresis).toBe(DEFAULTS.hysteresis);
    expect(fromExample.minPlanIntervalMs).toBe(DEFAULTS.minPlanIntervalMs);
    expect(fromExample.maxLineBytes).toBe(DEFAULTS.maxLineBytes);
    expect(fromExample.maxMessageBytes).toBe(DEFAULTS.maxMessageBytes);
    expect(fromExample.idleTimeoutMs).toBe(DEFAULTS.idleTimeoutMs);
    expect(fromExample.logLevel).toBe(DEFAULTS.logLevel);
    expect(fromExample.summarizer).toEqual(fromNothing.summarizer);
    expect(fromExample.socketGroup).toBe(fromNothing.socketGroup);
    expect(fromExample.budgetTokens).toBe(200_000);
  });

  it('is the file the units pass with --config', () => {
    const user = unitSection(readFileSync(`${USER_UNITS}/contextd.service`, 'utf8'), 'Service').get('ExecStart')?.[0];
    const system = unitSection(readFileSync(`${SYSTEM_UNITS}/contextd@.service`, 'utf8'), 'Service').get('ExecStart')?.[0];
    expect(user).toContain('--config %E/contextd/contextd.json');
    expect(system).toContain('--config /etc/contextd/contextd.json');
  });
});
