// Bundles the compiled `contextd hook` entry (dist/src/cli/hook.js, from tsc) into a few
// CommonJS files under dist/hook/, which bin/contextd.js requires for `contextd hook …`. A hook
// is a fresh process on an agent's critical path: on Node 20 the ESM loader resolves and reads
// each module separately (one file costs ~25 ms less start-up CPU than the ~20 it replaces), and
// CommonJS skips the ESM loader altogether (~13 ms less again). Modules only some events need
// (the transcript reader, the planner, SQLite) stay separate chunks, required by the dynamic
// import() of the path that needs them. npm packages are not bundled. `.cjs` names, because the
// package is `"type": "module"`.
import { isAbsolute } from 'node:path';
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: { hook: 'dist/src/cli/hook.js' },
  platform: 'node',
  // better-sqlite3's JavaScript (13 small CommonJS files, read on the hook's store path) is
  // bundled: resolving and loading them one by one cost the hook ~20 ms of CPU. Its addon is
  // passed to it by path (store/db.ts), so its `bindings` lookup, which cannot work from a
  // bundle, is never used.
  external: (id) => !id.startsWith('.') && !isAbsolute(id) && !/^better-sqlite3(\/|$)/.test(id),
  output: {
    dir: 'dist/hook',
    // Chunk names carry content hashes: without this, every build leaves the last one's beside it.
    cleanDir: true,
    format: 'cjs',
    // An npm package's import() stays import() (not require()): ES-module-only packages
    // (@secretlint/*, loaded by harvest/redact.ts on the archive path) then load on every Node
    // the engines field allows, not only where require() of an ES module works (20.19+, 22.12+).
    // test/cli/hook-bundle.test.ts checks the built files.
    dynamicImportInCjs: true,
    entryFileNames: '[name].cjs',
    chunkFileNames: '[name]-[hash].cjs',
    // Few files per path: what every run needs, the socket client (daemon up), the warm
    // bootstrap (daemon down); the rest (transcript reader, planner, SQLite) as split.
    codeSplitting: {
      groups: [
        { name: 'hook-common', test: /\/src\/(util\/errors|warm\/snapshot-format|ipc\/paths)\.js$/, priority: 3 },
        { name: 'hook-ipc', test: /\/src\/(ipc\/(client-transport|errors)|util\/framer)\.js$/, priority: 2 },
        { name: 'hook-warm', test: /\/src\/(warm\/|text\/|model\/tokens\.js$|store\/(confidence|repo)\.js$)/, priority: 1 },
      ],
    },
  },
});
