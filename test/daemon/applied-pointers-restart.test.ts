import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DaemonStatus } from '../../src/daemon/api.js';
import type { ContextdClient } from '../../src/ipc/client.js';
import { sessionsDir, startDaemon, until, type StartedDaemon } from './helpers.js';

// "Summaries must be true" across a daemon restart: a pointer summary ("A later identical call
// returned the same output.") acknowledged before the restart still keeps the output it points
// at in view when, after the restart (its edit replayed from the plan log), the session grows and
// is compacted harder. Real parts: the daemon, its socket, SQLite state, the tailer.

const dirs: string[] = [];
const started: StartedDaemon[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const SAME = /later identical call returned the same output/;
const BUDGET = 1_000_000; // startDaemon's
const SKILL = Array.from({ length: 40 }, (_, i) => `export function skillStep${i}(input: string): number { return ${i * 7} + input.length; }`).join('\n');

let calls = 0;
const line = (m: Record<string, unknown>): string => `${JSON.stringify(m)}\n`;
function read(path: string, output: string): string {
  const id = `call_${calls++}`;
  return line({ role: 'assistant', content: '', tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } }] }) + line({ role: 'tool', tool_call_id: id, content: output });
}

/** The skill file read twice (the same output), a standing constraint between the reads. */
const before =
  line({ role: 'system', content: 'You are a coding agent.' }) +
  line({ role: 'user', content: 'Follow the skill in docs/SKILL.md to release the package.' }) +
  line({ role: 'assistant', content: 'Reading the skill.' }) +
  read('docs/SKILL.md', SKILL) +
  line({ role: 'assistant', content: 'Read it once.' }) +
  line({ role: 'user', content: 'Always keep the changelog in the same commit as the version bump; never publish from a dirty tree.' }) +
  line({ role: 'assistant', content: 'Reading it again to be sure.' }) +
  read('docs/SKILL.md', SKILL) +
  line({ role: 'assistant', content: 'The same as before.' });

/** Other work, appended after the restart. */
function after(): string {
  let out = line({ role: 'user', content: 'Now bump the version and write the changelog.' });
  for (let i = 0; i < 4; i++) {
    const body = Array.from({ length: 50 }, (_, k) => `export function part${i}xStep${k}(input: string): number { return ${k * 7} + input.length; }`).join('\n');
    out += line({ role: 'assistant', content: `Looking at part ${i} of the package.` }) + read(`src/part${i}.ts`, body) + line({ role: 'assistant', content: `Part ${i} needs no change.` });
  }
  return out + line({ role: 'user', content: 'Now publish it.' });
}

async function sessionId(c: ContextdClient): Promise<string> {
  return until('the session', async () => ((await c.status()) as unknown as DaemonStatus).sessions.find((r) => r.file.endsWith('/work.jsonl'))?.sessionId);
}

/** Live sections holding the skill file's output, by their message ids (`L<offset>` of the transcript's lines). */
async function skillReads(c: ContextdClient, id: string, file: string): Promise<(readonly string[])[]> {
  const outputs = new Set<string>();
  let offset = 0;
  for (const l of readFileSync(file, 'utf8').split('\n')) {
    if (l.includes('"role":"tool"') && l.includes('skillStep0')) outputs.add(`L${offset}`);
    offset += Buffer.byteLength(l) + 1;
  }
  const sections = await c.sections(id);
  return sections.filter((x) => !x.compacted && (x.messageIds ?? []).some((m) => outputs.has(m))).map((x) => x.messageIds ?? []);
}

describe('an applied pointer summary across a daemon restart', () => {
  it('keeps the output it points at in view when the session grows and is compacted harder', async () => {
    const dir = sessionsDir('contextd-pointer-restart-', { work: before });
    dirs.push(dir);
    const file = join(dir, 'sessions', 'work.jsonl');
    let s = await startDaemon(dir);
    started.push(s);
    const id = await sessionId(s.c);
    const tokens = (await s.c.headroom(id)).tokens;
    const [first] = await skillReads(s.c, id, file);
    const firstTokens = (await s.c.sections(id)).find((x) => JSON.stringify(x.messageIds) === JSON.stringify(first))!.tokens;
    // only the first read goes: as a pointer at the second
    const plan = await s.c.compact(id, { targetHeadroom: 1 - (tokens - Math.floor(firstTokens * 0.6)) / BUDGET });
    expect(plan.edits.map((e) => e.reason)).toEqual(['redundant-tool-output']);
    expect(plan.edits[0]?.summary.content).toMatch(SAME);
    await s.c.ack({ planId: plan.planId, applied: true });
    const [second] = await skillReads(s.c, id, file);
    expect(second).toBeDefined();

    await s.stop();
    started.splice(started.indexOf(s), 1);
    s = await startDaemon(dir);
    started.push(s);
    appendFileSync(file, after());
    await until('the append read', async () => ((await s.c.headroom(id)).tokens > tokens * 2 ? true : undefined));
    const grown = (await s.c.headroom(id)).tokens;
    const tight = await s.c.compact(id, { targetHeadroom: 1 - Math.floor(grown * 0.5) / BUDGET });
    expect(tight.edits.length).toBeGreaterThan(0);
    await s.c.ack({ planId: tight.planId, applied: true });

    // what the agent sees: the pointer summary, and after it the output it points at
    const sections = await s.c.sections(id);
    const summary = sections.findIndex((x) => x.compacted && (x.messageIds ?? []).includes(`summary:${plan.edits[0]!.editId}`));
    expect(summary).toBeGreaterThanOrEqual(0);
    const kept = sections.findIndex((x) => !x.compacted && JSON.stringify(x.messageIds) === JSON.stringify(second));
    expect(kept).toBeGreaterThan(summary);
  });
});
