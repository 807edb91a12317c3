#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
//
// CommonJS on purpose (bin/package.json says so): `contextd hook …` runs on an agent's critical
// path as a fresh process per event, and on Node 20 an ES module entry costs ~13 ms more than a
// CommonJS one before any of our code runs (the ESM loader's set-up, resolve and load steps). So
// `hook` skips the full command table and requires the CommonJS hook bundle (dist/hook/, see
// rolldown.config.js) when it is as new as the compiled sources; a missing or stale bundle (only
// tsc ran) falls back to dist/src/cli/hook.js. Every other command imports the ESM CLI.
'use strict';
const { statSync } = require('node:fs');
const { join } = require('node:path');

// Node ≥ 22.1 keeps compiled code on disk between runs (in the OS temp dir, or
// NODE_COMPILE_CACHE); a no-op on Node 20, which lacks it.
require('node:module').enableCompileCache?.();

const HOOK_BUNDLE = join(__dirname, '../dist/hook/hook.cjs');
const HOOK_SOURCE = join(__dirname, '../dist/src/cli/hook.js');

function mtimeMs(path) {
  return statSync(path, { throwIfNoEntry: false })?.mtimeMs;
}

/** The hook module: the bundle when it is there and not older than the compiled sources. */
function loadHook() {
  const bundle = mtimeMs(HOOK_BUNDLE);
  const source = mtimeMs(HOOK_SOURCE);
  if (bundle !== undefined && (source === undefined || bundle >= source)) return Promise.resolve(require(HOOK_BUNDLE));
  return import('../dist/src/cli/hook.js');
}

const hook = process.argv[2] === 'hook';
// A hook must never break the agent: whatever fails here exits 0 (the agent goes on without it).
// Once the hook has answered (written synchronously) nothing is left to do: exit at once rather
// than wait for the event loop to drain.
const started = hook ? loadHook().then(async (m) => process.exit(await m.hookMain(process.argv.slice(3)))) : import('../dist/src/cli/main.js');
started.catch((err) => {
  process.stderr.write(`contextd: cannot start (${err && err.message}). Run \`npm run build\` first.\n`);
  process.exit(hook ? 0 : 1);
});
