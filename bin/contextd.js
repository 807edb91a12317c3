#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `contextd hook …` runs on an agent's critical path, so it skips the full command table.
import module from 'node:module';

// Node ≥ 22.1 keeps compiled code on disk between runs (in the OS temp dir, or
// NODE_COMPILE_CACHE); a no-op on Node 20, which lacks it.
module.enableCompileCache?.();

const hook = process.argv[2] === 'hook';
import(hook ? '../dist/src/cli/hook.js' : '../dist/src/cli/main.js')
  .then(async (m) => {
    if (hook) process.exitCode = await m.hookMain(process.argv.slice(3));
  })
  .catch((err) => {
    process.stderr.write(`contextd: cannot start (${err && err.message}). Run \`npm run build\` first.\n`);
    process.exit(hook ? 0 : 1);
  });
