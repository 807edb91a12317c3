import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { benchRetention, contextText, corpusProbes, generateSession, normalizeProbe, PROBE_CATEGORIES } from '../../src/bench/retention.js';
import { readTranscriptFile } from '../../src/ingest/decoder.js';
import { SessionModel } from '../../src/model/index.js';
import { toChat } from '../../src/compact/render.js';
import { generateTranscript, writeTranscripts } from '../fixtures/transcripts.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('retention bench', () => {
  it('generates deterministic sessions whose planted probes are all in the full context', () => {
    const a = generateSession(3, 20);
    const b = generateSession(3, 20);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const cats = new Set(a.probes.map((p) => p.category));
    for (const c of PROBE_CATEGORIES) expect(cats.has(c), c).toBe(true);
    const model = new SessionModel({ sessionId: a.sessionId });
    model.applyAll(a.events);
    const hay = contextText(model.messages().map(toChat));
    for (const p of a.probes) expect(hay.includes(normalizeProbe(p.text)), p.text).toBe(true);
  });

  it('takes corpus probes by rule, all present before compaction', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contextd-'));
    dirs.push(dir);
    const [file = ''] = writeTranscripts(dir, [generateTranscript('openai-chat', { seed: 3, turns: 4 })]);
    const t = await readTranscriptFile(file);
    const model = new SessionModel({ sessionId: 'h' });
    model.applyAll(t.events);
    const probes = corpusProbes(model.messages());
    expect(probes.filter((p) => p.category === 'goal')).toHaveLength(1);
    expect(probes.filter((p) => p.category === 'instruction').length).toBeGreaterThan(1);
    const hay = contextText(model.messages().map(toChat));
    for (const p of probes) expect(hay.includes(normalizeProbe(p.text)), p.text).toBe(true);
  });

  it('reports every strategy × budget, with contextd keeping at least as much as each baseline', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contextd-'));
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'codex.jsonl'), generateTranscript('codex', { seed: 8, turns: 6 }).jsonl);
    const r = await benchRetention({ corpusDir: dir, generated: 2, turns: 30, timing: false });
    const table = r['table'] as { strategy: string; budget: number; all: number; instruction: number; goal: number; tokensSaved: number }[];
    expect(table).toHaveLength(12);
    expect(r['sessions']).toBe(3);
    for (const budget of [0.3, 0.5, 0.7]) {
      const row = (s: string) => table.find((x) => x.strategy === s && x.budget === budget)!;
      const c = row('contextd');
      expect(c.instruction).toBe(1);
      expect(c.goal).toBe(1);
      expect(c.tokensSaved).toBeGreaterThan(1 - budget - 0.1);
      for (const b of ['truncate', 'mask', 'middle']) expect(c.all, `${b}@${budget}`).toBeGreaterThanOrEqual(row(b).all);
    }
  }, 60_000);
});
