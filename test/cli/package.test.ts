import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';

describe('the package as users install it', () => {
  it('exports the library and the client subpath from the built files', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { bin: Record<string, string>; engines: { node: string } };
    expect(pkg.bin['contextd']).toBe('bin/contextd.js');
    expect(pkg.engines.node).toBe('>=20.19');
    // Self-reference through package.json "exports" (dist/ is built by the global setup).
    const lib = (await import('contextd' as string)) as Record<string, unknown>;
    const client = (await import('contextd/client' as string)) as Record<string, unknown>;
    expect(typeof lib['SessionModel']).toBe('function');
    expect(typeof lib['Daemon']).toBe('function');
    expect(client['ContextdClient']).toBe(lib['ContextdClient']);
    expect(lib['VERSION']).toBe((JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version);
  });
});
