/**
 * The hook bundle (dist/hook/*.cjs, built by the global setup as `npm run build` builds it) is
 * CommonJS. require() of an ES module works unflagged only from Node 20.19 and 22.12, so on
 * 22.0–22.11 (which `engines` allows) a require() of an ES-module-only package throws
 * ERR_REQUIRE_ESM and the hook answers nothing: such a package must be loaded by import().
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const HOOK_DIR = fileURLToPath(new URL('../../dist/hook/', import.meta.url));

/** Whether Node loads `file` as an ES module: .mjs, or .js under a package.json of "type": "module" (the nearest one decides). */
function isEsm(file: string): boolean {
  if (file.endsWith('.mjs')) return true;
  if (file.endsWith('.cjs')) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) return (JSON.parse(readFileSync(pkg, 'utf8')) as { type?: string }).type === 'module';
    if (dirname(dir) === dir) return false;
  }
}

/** Bare specifiers of `code` loaded with `kind`: require("x") or import("x"), built-ins and relative paths left out. */
function packagesLoaded(code: string, kind: 'require' | 'import'): string[] {
  const re = kind === 'require' ? /(?<![\w$.])require\(\s*["']([^"']+)["']\s*\)/g : /(?<![\w$.])import\(\s*["']([^"']+)["']\s*\)/g;
  return [...code.matchAll(re)].map((m) => m[1] as string).filter((s) => !s.startsWith('.') && !isBuiltin(s));
}

describe('hook bundle', () => {
  it('require()s no ES-module-only package: those it needs (secretlint, on the archive path) are import()ed', () => {
    if (process.env['CONTEXTD_BUILD_FAILED']) throw new Error(`build failed: ${process.env['CONTEXTD_BUILD_FAILED']}`);
    const files = readdirSync(HOOK_DIR).filter((f) => f.endsWith('.cjs'));
    expect(files).toContain('hook.cjs');
    const required: { file: string; spec: string; resolved: string }[] = [];
    const imported: string[] = [];
    for (const f of files) {
      const path = join(HOOK_DIR, f);
      const code = readFileSync(path, 'utf8');
      const req = createRequire(path);
      for (const spec of packagesLoaded(code, 'require')) required.push({ file: f, spec, resolved: req.resolve(spec) });
      imported.push(...packagesLoaded(code, 'import'));
    }
    // The check means something only if packages are required at all: `bindings` is
    // (better-sqlite3's own addon lookup, bundled with it, used only when the addon is not where
    // store/db.ts looks).
    expect(required.map((r) => r.spec)).toContain('bindings');
    // better-sqlite3's JavaScript is in the bundle, not loaded from node_modules.
    expect(required.map((r) => r.spec).filter((s) => s.startsWith('better-sqlite3'))).toEqual([]);
    expect(required.filter((r) => isEsm(r.resolved))).toEqual([]);
    // The ES-module-only packages of the archive path are there, by import().
    expect(imported).toEqual(expect.arrayContaining(['@secretlint/core', '@secretlint/secretlint-rule-preset-recommend', '@secretlint/profiler']));
    for (const spec of imported.filter((s) => s.startsWith('@secretlint/'))) expect(isEsm(createRequire(join(HOOK_DIR, 'hook.cjs')).resolve(spec))).toBe(true);
  });
});
