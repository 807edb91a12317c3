/** The spawned daemon's start clears the derived data other builds left in a shared state folder. */
import { describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DerivedData, openDb } from '../../src/store/index.js';
import { DERIVATION_VERSION } from '../../src/model/index.js';
import { e2eScope } from './spawn.js';

const scope = e2eScope();

/** Distinct 53-bit keys (read back exactly). */
const key = (i: number): number => 2 ** 53 - 1 - i * 0x9e3779b1;

describe('derived data across builds', () => {
  it('a daemon start deletes the rows of other derivation versions and keeps its own', async () => {
    const d = scope.tempDir('derived');
    mkdirSync(d.state, { recursive: true, mode: 0o700 });
    const path = join(d.state, 'contextd.db');
    const seed = openDb(path);
    const store = new DerivedData(seed);
    // An older and a newer build's rows beside this build's own.
    store.putMany(DERIVATION_VERSION - 1, Array.from({ length: 50 }, (_, i) => ({ key: key(i), data: Uint8Array.of(1, i) })));
    store.putMany(DERIVATION_VERSION + 1, Array.from({ length: 30 }, (_, i) => ({ key: key(i), data: Uint8Array.of(2, i) })));
    store.putMany(DERIVATION_VERSION, Array.from({ length: 20 }, (_, i) => ({ key: key(i), data: Uint8Array.of(3, i) })));
    seed.close();

    const daemon = await scope.daemon(['--watch', d.watch, '--socket', d.socket, '--state', d.state]);
    daemon.proc.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);

    const after = openDb(path);
    scope.defer(() => void after.close());
    const versions = after.prepare('SELECT version, count(*) AS n FROM derived_data GROUP BY version').all() as { version: number; n: number }[];
    expect(versions).toEqual([{ version: DERIVATION_VERSION, n: 20 }]);
    expect([...(new DerivedData(after).getMany(DERIVATION_VERSION, [key(7)]).get(key(7)) ?? [])]).toEqual([3, 7]);
  });
});
