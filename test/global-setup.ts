import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The e2e tests spawn the real CLI from dist/ (and the hook bundle), so build it from the current sources once
 * before the suite (a stale dist/ would test old code). A failed build does not stop unit
 * tests from running: the e2e tests then fail on their own (and `npm ci` already builds).
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    execFileSync(process.execPath, [fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
    // The hook bundle bin/contextd.js loads for `contextd hook` (same step as `npm run build`).
    execFileSync(process.execPath, [fileURLToPath(new URL('../node_modules/rolldown/bin/cli.mjs', import.meta.url)), '-c', 'rolldown.config.js', '--logLevel', 'warn'], { cwd: root, stdio: 'pipe' });
  } catch (err) {
    const out = String((err as { stdout?: Buffer }).stdout ?? '');
    process.env['CONTEXTD_BUILD_FAILED'] = out.slice(0, 4000) || 'build failed';
    process.stderr.write(`global-setup: tsc build failed; e2e tests will fail:\n${out.slice(0, 4000)}\n`);
  }
}
