/**
 * Knowledge items and user-pattern candidates shared by all warm templates.
 *
 * Knowledge is keyed by (repo, normalized-text hash): the same fact seen in several sessions
 * is ONE row whose `evidence` counts the sessions that produced it. User patterns are only
 * candidates until they recur in a second session (`PATTERN_PROMOTION_SESSIONS`).
 * Functions here run inside the caller's transaction (see templates.ts); they never await.
 */
import type { Db } from './db.js';
import { DEFAULT_HALF_LIFE_MS, confidenceFromEvidence, decayFactor, itemConfidence } from './confidence.js';
import { sha1Hex } from '../util/sha1.js';

export { DEFAULT_HALF_LIFE_MS, confidenceFromEvidence, decayFactor, itemConfidence };

export const KNOWLEDGE_CATEGORIES = ['fact', 'pitfall', 'pattern', 'tool-quirk', 'question'] as const;
export type KnowledgeCategory = (typeof KNOWLEDGE_CATEGORIES)[number];

/** A user pattern becomes a pattern once this many distinct sessions showed it. */
export const PATTERN_PROMOTION_SESSIONS = 2;
/** Session ids remembered per pattern candidate (the count keeps growing past it). */
const MAX_PATTERN_SESSIONS = 50;

export interface KnowledgeInput {
  readonly category: KnowledgeCategory;
  readonly text: string;
}

/** A knowledge item as read back, with its confidence decayed to `now`. */
export interface KnowledgeItem {
  readonly id: number;
  readonly text: string;
  readonly category: KnowledgeCategory;
  /** '' when not tied to a repository. */
  readonly repo: string;
  readonly evidence: number;
  readonly confidence: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export const USER_PATTERN_KINDS = ['constraint', 'style', 'request'] as const;
export type UserPatternKind = (typeof USER_PATTERN_KINDS)[number];

export interface UserPatternInput {
  readonly kind: UserPatternKind;
  readonly text: string;
}

export interface UserPattern {
  readonly hash: string;
  readonly kind: UserPatternKind;
  readonly text: string;
  readonly repo: string;
  readonly sessionCount: number;
  readonly sessions: readonly string[];
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly promoted: boolean;
}

/** Lower-case, collapse whitespace, fold digits and punctuation: near-identical texts share it. */
export function normalizeText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[0-9]+/g, '#')
    .replace(/[^\p{L}\p{N}#/._-]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Dedup key of a text: 16 hex chars of sha1 over its normalized form. */
export function normalizedHash(text: string): string {
  return sha1Hex(normalizeText(text)).slice(0, 16);
}

interface KnowledgeRow {
  knowledge_id: number;
  repo: string;
  category: string;
  text: string;
  evidence: number;
  created_at: number;
  updated_at: number;
}

export function knowledgeFromRow(r: KnowledgeRow, now: number, halfLifeMs?: number): KnowledgeItem {
  return {
    id: r.knowledge_id,
    text: r.text,
    category: r.category as KnowledgeCategory,
    repo: r.repo,
    evidence: r.evidence,
    confidence: itemConfidence(r.evidence, r.updated_at, now, halfLifeMs),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * Upsert one knowledge item for a session; the evidence grows once per distinct session
 * (`sessionId` null: an import, which keeps the larger of both counts). Returns the row id.
 */
export function upsertKnowledge(db: Db, repo: string, item: KnowledgeInput, sessionId: string | null, at: number, minEvidence = 1): number {
  const hash = normalizedHash(item.text);
  const row = db
    .prepare(
      `INSERT INTO knowledge (repo, category, text, norm_hash, evidence, last_session, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(repo, norm_hash) DO UPDATE SET
         evidence = CASE WHEN excluded.last_session IS NULL THEN MAX(evidence, excluded.evidence)
           ELSE MAX(excluded.evidence, evidence + (CASE WHEN last_session IS excluded.last_session THEN 0 ELSE 1 END)) END,
         last_session = COALESCE(excluded.last_session, last_session),
         updated_at = MAX(updated_at, excluded.updated_at)
       RETURNING knowledge_id`,
    )
    .get(repo, item.category, item.text, hash, minEvidence, sessionId, at, at) as { knowledge_id: number };
  return row.knowledge_id;
}

/** Record that `sessionId` showed a user pattern; returns whether it is now promoted. */
export function upsertUserPattern(db: Db, repo: string, p: UserPatternInput, sessionId: string, at: number): boolean {
  const hash = normalizedHash(`${p.kind}:${p.text}`);
  const existing = db.prepare(`SELECT sessions, session_count FROM user_patterns WHERE norm_hash = ?`).get(hash) as
    | { sessions: string; session_count: number }
    | undefined;
  if (!existing) {
    db.prepare(
      `INSERT INTO user_patterns (norm_hash, kind, text, repo, session_count, sessions, first_seen, last_seen) VALUES (?, ?, ?, ?, 1, ?, ?, ?)`,
    ).run(hash, p.kind, p.text, repo, JSON.stringify([sessionId]), at, at);
    return 1 >= PATTERN_PROMOTION_SESSIONS;
  }
  const sessions = JSON.parse(existing.sessions) as string[];
  if (sessions.includes(sessionId)) return existing.session_count >= PATTERN_PROMOTION_SESSIONS;
  const count = existing.session_count + 1;
  const kept = [...sessions, sessionId].slice(-MAX_PATTERN_SESSIONS);
  // A pattern seen in two repositories is the user's, not one repo's.
  db.prepare(
    `UPDATE user_patterns SET session_count = ?, sessions = ?, last_seen = MAX(last_seen, ?), repo = CASE WHEN repo = ? THEN repo ELSE '' END WHERE norm_hash = ?`,
  ).run(count, JSON.stringify(kept), at, repo, hash);
  return count >= PATTERN_PROMOTION_SESSIONS;
}

interface PatternRow {
  norm_hash: string;
  kind: string;
  text: string;
  repo: string;
  session_count: number;
  sessions: string;
  first_seen: number;
  last_seen: number;
}

function patternFromRow(r: PatternRow): UserPattern {
  return {
    hash: r.norm_hash,
    kind: r.kind as UserPatternKind,
    text: r.text,
    repo: r.repo,
    sessionCount: r.session_count,
    sessions: JSON.parse(r.sessions) as string[],
    firstSeen: r.first_seen,
    lastSeen: r.last_seen,
    promoted: r.session_count >= PATTERN_PROMOTION_SESSIONS,
  };
}

/** Promoted patterns (≥ 2 sessions) for a repo (plus repo-independent ones), most frequent first. */
export function promotedPatterns(db: Db, repo?: string): UserPattern[] {
  const rows = db
    .prepare(
      `SELECT * FROM user_patterns WHERE session_count >= ? AND (repo = '' OR repo = ?) ORDER BY session_count DESC, last_seen DESC LIMIT 50`,
    )
    .all(PATTERN_PROMOTION_SESSIONS, repo ?? '') as PatternRow[];
  return rows.map(patternFromRow);
}

/** Every pattern row, candidates included (export, tests). */
export function allPatterns(db: Db): UserPattern[] {
  return (db.prepare(`SELECT * FROM user_patterns ORDER BY norm_hash`).all() as PatternRow[]).map(patternFromRow);
}

/** Import a pattern row, unioning its sessions with an existing one. */
export function importPattern(db: Db, p: Pick<UserPattern, 'kind' | 'text' | 'repo' | 'sessions' | 'firstSeen' | 'lastSeen'> & { sessionCount: number }): void {
  const hash = normalizedHash(`${p.kind}:${p.text}`);
  const existing = db.prepare(`SELECT * FROM user_patterns WHERE norm_hash = ?`).get(hash) as PatternRow | undefined;
  if (!existing) {
    db.prepare(
      `INSERT INTO user_patterns (norm_hash, kind, text, repo, session_count, sessions, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(hash, p.kind, p.text, p.repo, Math.max(p.sessionCount, p.sessions.length), JSON.stringify(p.sessions.slice(-MAX_PATTERN_SESSIONS)), p.firstSeen, p.lastSeen);
    return;
  }
  const union = [...new Set([...(JSON.parse(existing.sessions) as string[]), ...p.sessions])];
  const count = Math.max(existing.session_count, p.sessionCount, union.length);
  db.prepare(`UPDATE user_patterns SET session_count = ?, sessions = ?, first_seen = MIN(first_seen, ?), last_seen = MAX(last_seen, ?) WHERE norm_hash = ?`).run(
    count,
    JSON.stringify(union.slice(-MAX_PATTERN_SESSIONS)),
    p.firstSeen,
    p.lastSeen,
    hash,
  );
}
