#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `contextd hook …` runs on an agent's critical path, so it skips the full command table and
// loads the hook bundle (dist/hook/, see rolldown.config.js) when it is as new as the compiled
// sources; a missing or stale bundle (only tsc ran) falls back to dist/src/cli/hook.js.
import { statSync } from 'node:fs';
import module from 'node:module';

// Node ≥ 22.1 keeps compiled code on disk between runs (in the OS temp dir, or
// NODE_COMPILE_CACHE); a no-op on Node 20, which lacks it.
module.enableCompileCache?.();

const HOOK_BUNDLE = '../dist/hook/hook.js';
const HOOK_SOURCE = '../dist/src/cli/hook.js';

function mtimeMs(rel) {
  return statSync(new URL(rel, import.meta.url), { throwIfNoEntry: false })?.mtimeMs;
}

function hookEntry() {
  const bundle = mtimeMs(HOOK_BUNDLE);
  const source = mtimeMs(HOOK_SOURCE);
  return bundle !== undefined && (source === undefined || bundle >= source) ? HOOK_BUNDLE : HOOK_SOURCE;
}

const hook = process.argv[2] === 'hook';
import(hook ? hookEntry() : '../dist/src/cli/main.js')
  .then(async (m) => {
    if (hook) process.exitCode = await m.hookMain(process.argv.slice(3));
  })
  .catch((err) => {
    process.stderr.write(`contextd: cannot start (${err && err.message}). Run \`npm run build\` first.\n`);
    process.exit(hook ? 0 : 1);
  });
