/**
 * `stale-read`: a file read whose content a later read or edit of the same path supersedes.
 * Paths come from tool arguments (Read/view/open/cat/head/sed -n …; Edit/Write/apply_patch/sed -i …).
 */
import { toolAction } from '../../model/toolargs.js';
import { canonicalPath, samePath } from '../../text/index.js';
import type { Candidate, Detector, DetectorContext } from '../types.js';
import type { Message } from '../../model/messages.js';
import { memoList } from '../memo.js';
import { callsOf, isCompactable, memoMessages } from './util.js';

/** Reads smaller than this are left alone. */
export const MIN_TOKENS = 30;

interface Access {
  readonly index: number;
  readonly sectionId: string;
  readonly path: string;
  readonly write: boolean;
}

function basename(p: string): string {
  const i = p.lastIndexOf('/');
  return i >= 0 ? p.slice(i + 1) : p;
}

/** Canonical paths a section's calls read and wrote (memoized per message list). */
function accessesOf(msgs: readonly Message[]): { reads: readonly string[]; writes: readonly string[] } {
  return memoList(msgs, 'stale-accesses', (ms) => {
    const reads: string[] = [];
    const writes: string[] = [];
    for (const c of callsOf(ms)) {
      const a = toolAction(c);
      reads.push(...a.reads.map(canonicalPath));
      writes.push(...a.writes.map(canonicalPath));
    }
    return { reads, writes };
  });
}

export const staleRead: Detector = {
  name: 'stale-read',
  detect(ctx: DetectorContext): Candidate[] {
    const msgsOf = memoMessages(ctx);
    const byBase = new Map<string, Access[]>();
    const perSection: { reads: readonly string[]; writes: readonly string[] }[] = [];
    const note = (index: number, sectionId: string, path: string, write: boolean): void => {
      const b = basename(path);
      const arr = byBase.get(b);
      const access = { index, sectionId, path, write };
      if (arr) arr.push(access);
      else byBase.set(b, [access]);
    };
    ctx.sections.forEach((s, index) => {
      const acc = accessesOf(msgsOf(s));
      perSection.push(acc);
      for (const p of acc.reads) note(index, s.id, p, false);
      for (const p of acc.writes) note(index, s.id, p, true);
    });
    const out: Candidate[] = [];
    ctx.sections.forEach((s, index) => {
      const acc = perSection[index];
      if (!acc || acc.reads.length === 0 || acc.writes.length > 0) return;
      if (!isCompactable(s) || s.tokens < MIN_TOKENS) return;
      const supersededBy: string[] = [];
      for (const p of acc.reads) {
        const later = (byBase.get(basename(p)) ?? []).find((a) => a.index > index && samePath(a.path, p));
        if (!later) return; // one of its paths is still current
        supersededBy.push(later.sectionId);
      }
      out.push({ sectionIds: [s.id], reason: 'stale-read', detail: { paths: acc.reads, supersededBy } });
    });
    return out;
  },
};
