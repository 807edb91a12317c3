import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageJson(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('contextd: package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

/** contextd's version, read from package.json once (works from src/ and from dist/src/). */
export const VERSION: string = (JSON.parse(readFileSync(findPackageJson(), 'utf8')) as { version: string }).version;
