#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import('../dist/src/cli/main.js').catch((err) => {
  process.stderr.write(`contextd: cannot start (${err && err.message}). Run \`npm run build\` first.\n`);
  process.exit(1);
});
