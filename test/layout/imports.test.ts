import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkLayout, findCycles, readImportGraph, type ImportGraph } from './import-graph.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

describe('the layout of src/ (design §2)', () => {
  it('follows the dependency arrows, keeps model pure and store a leaf, and has no cycles', () => {
    const graph = readImportGraph(SRC);
    // The walk really saw the tree: the areas the rules talk about are all there.
    for (const file of ['model/messages.ts', 'store/archive.ts', 'ipc/results.ts', 'daemon/daemon.ts', 'cli/main.ts']) {
      expect(graph.has(file), file).toBe(true);
    }
    expect(checkLayout(graph)).toEqual([]);
  });
});

describe('checkLayout', () => {
  const graph = (entries: Record<string, string[]>): ImportGraph => new Map(Object.entries(entries));

  it('accepts arrows the design allows', () => {
    const ok = graph({
      'model/session.ts': ['./messages.js', '../util/errors.js', 'tiktoken'],
      'model/messages.ts': [],
      'ingest/decoder.ts': ['../model/messages.js', 'node:fs'],
      'harvest/files.ts': ['../ingest/decoder.js', '../store/db.js', '../model/messages.js'],
      'ingest/decoder.js': [],
      'store/db.ts': ['better-sqlite3', '../util/errors.js'],
      'util/errors.ts': [],
      'cli/main.ts': ['../daemon/daemon.js', '../bench/ingest.js', '../version.js'],
    });
    expect(checkLayout(ok)).toEqual([]);
  });

  it('reports model importing ingest, store importing model, and ipc reaching into the daemon', () => {
    const bad = graph({
      'model/context.ts': ['../ingest/types.js'],
      'ingest/types.ts': [],
      'store/archive.ts': ['../model/messages.js'],
      'model/messages.ts': [],
      'ipc/server.ts': ['../daemon/daemon.js'],
      'daemon/daemon.ts': [],
    });
    expect(checkLayout(bad)).toEqual([
      'model/context.ts: model may not import ingest ("../ingest/types.js")',
      'store/archive.ts: store may not import model ("../model/messages.js")',
      'ipc/server.ts: ipc may not import daemon ("../daemon/daemon.js")',
    ]);
  });

  it('reports an impure model, a file outside src/ and an area the rules do not place', () => {
    const bad = graph({
      'model/tokens.ts': ['node:fs', 'better-sqlite3'],
      'cli/bench.ts': ['../../bench/harness.js'],
      'gadgets/x.ts': [],
    });
    expect(checkLayout(bad)).toEqual([
      'model/tokens.ts: model must stay pure but imports "node:fs"',
      'model/tokens.ts: model must stay pure but imports "better-sqlite3"',
      'cli/bench.ts: imports "../../bench/harness.js" from outside src/',
      'gadgets/x.ts: area "gadgets" has no place in the layout rules (test/layout/import-graph.ts)',
    ]);
  });

  it('finds a cycle between two files of one area, type-only imports included', () => {
    const cyclic = graph({
      'daemon/daemon.ts': ['./handlers.js'],
      'daemon/handlers.ts': ['./api.js'],
      'daemon/api.ts': ['./daemon.js'],
    });
    expect(findCycles(cyclic)).toEqual([['daemon/daemon.ts', 'daemon/handlers.ts', 'daemon/api.ts', 'daemon/daemon.ts']]);
    expect(checkLayout(cyclic)).toEqual(['import cycle: daemon/daemon.ts -> daemon/handlers.ts -> daemon/api.ts -> daemon/daemon.ts']);
  });
});
