/**
 * The import graph of src/ and the layout rules of design §2, as data, so a test can check
 * the real tree and prove the checker fails on a synthetic bad one.
 *
 * Specifiers are read with the TypeScript compiler's own pre-processor (static imports,
 * `import type`, `export … from` and dynamic `import()` alike), so nothing slips past a regex.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import ts from 'typescript';

/** Import specifiers of each source file, keyed by its path relative to src/ (posix separators). */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** Read every `.ts` file under `srcDir` and list its import specifiers. */
export function readImportGraph(srcDir: string): ImportGraph {
  const graph = new Map<string, readonly string[]>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const info = ts.preProcessFile(readFileSync(path, 'utf8'), true, true);
        graph.set(relative(srcDir, path).split(sep).join('/'), info.importedFiles.map((f) => f.fileName));
      }
    }
  };
  walk(srcDir);
  return graph;
}

/**
 * Which areas (top-level folders of src/, or a root file's name) each area may import
 * besides itself. `util`, `text` (the one home of text rules: words, paths, errors, verdicts)
 * and `version` (src/version.ts) may be imported by anyone; `text` itself imports only util.
 */
export interface LayoutRules {
  readonly allowed: Readonly<Record<string, readonly string[]>>;
  /** Areas that must stay pure: none of these external specifiers (prefix match). */
  readonly forbiddenExternal: Readonly<Record<string, readonly string[]>>;
  /** Exact specifiers an area may import although `forbiddenExternal` bans their prefix. */
  readonly permittedExternal?: Readonly<Record<string, readonly string[]>>;
  /** Areas everyone may import. */
  readonly shared: readonly string[];
}

const ALL_WIRED = ['ingest', 'model', 'compact', 'ipc', 'harvest', 'warm', 'store', 'proxy', 'integrations'] as const;

/** Design §2's arrows. A new top-level folder must be placed here before it may import anything. */
export const LAYOUT_RULES: LayoutRules = {
  shared: ['util', 'text', 'version'],
  allowed: {
    util: [],
    text: [],
    version: [],
    // The pure base: knows nothing of ingest, compact, ipc or the store.
    model: [],
    // A leaf: what it stores is described by its own plain types.
    store: [],
    ingest: ['model'],
    compact: ['model'],
    // Handed its handlers; never reaches into the daemon's wiring.
    ipc: [],
    harvest: ['ingest', 'model', 'store'],
    warm: ['store', 'model'],
    // Handed a store and a logger by the daemon; the store's types describe what it is handed.
    proxy: ['model', 'compact', 'store'],
    integrations: ['ingest', 'model', 'compact', 'ipc'],
    // The demo's sample transcript.
    demo: [],
    // Scenarios run by `contextd bench`: they drive every layer, as the daemon does.
    bench: [...ALL_WIRED, 'daemon', 'demo'],
    daemon: [...ALL_WIRED],
    cli: [...ALL_WIRED, 'daemon', 'bench', 'demo'],
    // The package's public barrel (src/index.ts).
    index: [...ALL_WIRED, 'daemon'],
  },
  forbiddenExternal: {
    model: ['node:', 'fs', 'net', 'child_process', 'better-sqlite3', 'chokidar'],
    text: ['node:fs', 'node:net', 'node:child_process', 'better-sqlite3', 'chokidar', 'tiktoken'],
    store: ['chokidar', 'node:net', 'node:child_process'],
    compact: ['node:net', 'better-sqlite3'],
  },
  permittedExternal: {
    // model/tokens.ts requires tiktoken on first count (createRequire), so code that only needs
    // its constants does not instantiate tiktoken's WASM; it does no I/O of its own.
    model: ['node:module'],
  },
};

/** The area a src-relative path belongs to: its top folder, or a root file's name without `.ts`. */
export function areaOf(file: string): string {
  const slash = file.indexOf('/');
  return slash >= 0 ? file.slice(0, slash) : file.replace(/\.ts$/, '');
}

/** Resolve a relative specifier from `file` to a src-relative `.ts` path; undefined for packages. */
export function resolveSpecifier(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  return posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, '.ts');
}

function matchesExternal(specifier: string, banned: string): boolean {
  return banned.endsWith(':') ? specifier.startsWith(banned) : specifier === banned || specifier.startsWith(`${banned}/`);
}

/** Every layout violation in `graph`: forbidden arrows, impure imports, unplaced areas and cycles. */
export function checkLayout(graph: ImportGraph, rules: LayoutRules = LAYOUT_RULES): string[] {
  const problems: string[] = [];
  for (const [file, specifiers] of graph) {
    const from = areaOf(file);
    const allowed = rules.allowed[from];
    if (!allowed) {
      problems.push(`${file}: area "${from}" has no place in the layout rules (test/layout/import-graph.ts)`);
      continue;
    }
    for (const spec of specifiers) {
      const target = resolveSpecifier(file, spec);
      if (target === undefined) {
        const permitted = rules.permittedExternal?.[from]?.includes(spec) ?? false;
        const banned = permitted ? undefined : (rules.forbiddenExternal[from] ?? []).find((b) => matchesExternal(spec, b));
        if (banned !== undefined) problems.push(`${file}: ${from} must stay pure but imports "${spec}"`);
        continue;
      }
      if (target.startsWith('..')) {
        problems.push(`${file}: imports "${spec}" from outside src/`);
        continue;
      }
      const to = areaOf(target);
      if (to === from || rules.shared.includes(to) || allowed.includes(to)) continue;
      problems.push(`${file}: ${from} may not import ${to} ("${spec}")`);
    }
  }
  for (const cycle of findCycles(graph)) problems.push(`import cycle: ${cycle.join(' -> ')}`);
  return problems;
}

/** File-level import cycles (each reported once, from the first file the walk meets on it). */
export function findCycles(graph: ImportGraph): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const spec of graph.get(file) ?? []) {
      const target = resolveSpecifier(file, spec);
      if (target === undefined || !graph.has(target)) continue;
      const s = state.get(target);
      if (s === 'open') cycles.push([...stack.slice(stack.indexOf(target)), target]);
      else if (s === undefined) visit(target);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return cycles;
}
