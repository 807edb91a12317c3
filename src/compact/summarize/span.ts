/**
 * Span summaries: a contiguous run of conversational messages (user and assistant text, no
 * tool calls) rendered as ONE compressed, readable message that keeps what a later question
 * needs — who said it, what (names, numbers, places, things, decisions), and when.
 *
 * Rendering, one line per message that still says something:
 *  - `Speaker: content` — the speaker is the message's own `Name:` prefix, else User/Assistant;
 *  - filler sentences (greetings, thanks, interjections only) are dropped;
 *  - dates: a short message that states a date ("[new chat session, 1:56 pm on 8 May, 2023]")
 *    is kept whole as a heading, and message timestamps print a heading when the day changes;
 *    relative dates after a heading are resolved ("yesterday (7 May 2023)", "last week (the
 *    week before 8 May 2023)", "last year (2022)");
 *  - negations are always kept, so a compressed line never flips a statement.
 * Compression grows in steps until the text fits its budget: (0) filler dropped; (1) function
 * words dropped (telegraphic; text/words.ts FUNCTION_WORDS); (2) words the span already said dropped, lines grouped per
 * speaker between date headings; then short words go (≥ 4, 5 … 8 characters kept), from the
 * oldest lines on. The first step that fits wins.
 * Nothing is invented: every word printed is a word of the originals, a date heading, or a
 * date resolved from one.
 */
import type { Message } from '../../model/messages.js';
import { compactionNoteBody, isAgentSummary } from '../../model/classify.js';
import { FUNCTION_WORDS } from '../../text/index.js';
import type { SummarizeInput } from '../types.js';

const CHARS_PER_TOKEN = 3.5;

/** Chat interjections and pleasantries that carry no fact. */
const FILLER = new Set(
  (
    'hey hi hello hiya yo wow oh ooh ah aw aww haha hah lol omg yay yeah yep yup nope thanks thank thx ty cheers great ' +
    'awesome amazing cool nice glad good wonderful fantastic fabulous lovely sweet totally really truly definitely ' +
    'absolutely super so very just well gosh whoa hmm um uh ya bye see soon take care congrats congratulations sure ' +
    'sounds agree exactly true right indeed proud happy love appreciate hear hearing kind means mean lot thing things ' +
    'stuff such incredible awesome fun'
  ).split(' '),
);
/** Words a compressed line keeps whatever the step (a dropped negation flips the statement). */
const NEGATIONS = new Set(['not', 'no', 'nor', 'never', 'none', 'nothing', 'nobody', 'without', 'neither']);
const NEG_CONTRACTION = /n['’]t$/i;

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH_RE = '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
/** "8 May, 2023", "May 8, 2023", "2023-05-08". */
const DATE_RES = [
  new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(${MONTH_RE})\\.?,?\\s+(\\d{4})\\b`, 'i'),
  new RegExp(`\\b(${MONTH_RE})\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s+(\\d{4})\\b`, 'i'),
  /\b(\d{4})-(\d{2})-(\d{2})\b/,
];
/** Longest message (chars) read as a date heading. */
const HEADING_MAX_CHARS = 120;

/** A calendar day (UTC). */
interface Day {
  readonly y: number;
  readonly m: number;
  readonly d: number;
}

function monthIndex(name: string): number {
  const n = name.toLowerCase().slice(0, 3);
  return MONTHS.findIndex((m) => m.startsWith(n));
}

/** The first date a text states, if any. */
export function parseDate(text: string): Day | undefined {
  for (const [i, re] of DATE_RES.entries()) {
    const m = re.exec(text);
    if (!m) continue;
    const [a, b, c] = [m[1] ?? '', m[2] ?? '', m[3] ?? ''];
    const day = i === 0 ? { y: +c, m: monthIndex(b), d: +a } : i === 1 ? { y: +c, m: monthIndex(a), d: +b } : { y: +a, m: +b - 1, d: +c };
    if (day.m >= 0 && day.m < 12 && day.d >= 1 && day.d <= 31) return day;
  }
  return undefined;
}

function shift(day: Day, days: number): Day {
  const t = new Date(Date.UTC(day.y, day.m, day.d + days));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth(), d: t.getUTCDate() };
}

/** "7 May 2023". */
export function formatDay(day: Day): string {
  const name = MONTHS[day.m] ?? '';
  return `${day.d} ${name.charAt(0).toUpperCase()}${name.slice(1)} ${day.y}`;
}

function monthName(m: number): string {
  const name = MONTHS[((m % 12) + 12) % 12] ?? '';
  return name.charAt(0).toUpperCase() + name.slice(1);
}

const RELATIVE_RE = /\b(yesterday|today|tonight|tomorrow|last night|this morning|last (?:week|weekend|month|year)|next (?:week|weekend|month|year)|this (?:week|weekend|month|year)|(\d+|a|one|two|three|four|five|six|seven|eight|nine|ten) (day|week|month|year)s? ago)\b/gi;
const SMALL_NUMBERS: Record<string, number> = { a: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10 };

/** What a relative date means on `day`, or undefined when it cannot be pinned down. */
function resolveRelative(phrase: string, day: Day): string | undefined {
  const p = phrase.toLowerCase();
  if (p === 'yesterday' || p === 'last night') return formatDay(shift(day, -1));
  if (p === 'today' || p === 'tonight' || p === 'this morning') return formatDay(day);
  if (p === 'tomorrow') return formatDay(shift(day, 1));
  if (p === 'last week') return `the week before ${formatDay(day)}`;
  if (p === 'last weekend') return `the weekend before ${formatDay(day)}`;
  if (p === 'next week') return `the week after ${formatDay(day)}`;
  if (p === 'next weekend') return `the weekend after ${formatDay(day)}`;
  if (p === 'this week' || p === 'this weekend') return `the ${p.slice(5)} of ${formatDay(day)}`;
  if (p === 'last month') return `${monthName(day.m - 1)} ${day.m === 0 ? day.y - 1 : day.y}`;
  if (p === 'next month') return `${monthName(day.m + 1)} ${day.m === 11 ? day.y + 1 : day.y}`;
  if (p === 'this month') return `${monthName(day.m)} ${day.y}`;
  if (p === 'last year') return String(day.y - 1);
  if (p === 'next year') return String(day.y + 1);
  if (p === 'this year') return String(day.y);
  const ago = /^(\d+|a|one|two|three|four|five|six|seven|eight|nine|ten) (day|week|month|year)s? ago$/.exec(p);
  if (ago) {
    const n = SMALL_NUMBERS[ago[1] ?? ''] ?? Number(ago[1]);
    if (!Number.isFinite(n) || n > 100) return undefined;
    if (ago[2] === 'year') return String(day.y - n);
    if (ago[2] === 'month') return `${monthName(day.m - n)} ${day.y + Math.floor((day.m - n) / 12)}`;
    if (ago[2] === 'day') return formatDay(shift(day, -n));
    return `the week of ${formatDay(shift(day, -7 * n))}`;
  }
  return undefined;
}

/** `text` with each relative date followed by what it means on `day`. */
export function resolveDates(text: string, day: Day | undefined): string {
  if (!day) return text;
  return text.replace(RELATIVE_RE, (phrase) => {
    const r = resolveRelative(phrase, day);
    return r ? `${phrase} (${r})` : phrase;
  });
}

/** The note that stands for images a summary replaces: `[2 images omitted — recall h_…]`. */
export function imageNote(count: number, handle: string | undefined): string {
  const what = count === 1 ? 'image' : `${count} images`;
  return handle ? `[${what} omitted — recall ${handle}]` : `[${what} omitted]`;
}

/**
 * True when every message is conversational: user/assistant text (or a pasted image), no tool
 * calls or results.
 */
export function isConversational(messages: readonly Message[]): boolean {
  return (
    messages.length > 0 &&
    messages.some((m) => (m.text ?? '').trim().length > 0) &&
    messages.every((m) => (m.role === 'user' || m.role === 'assistant') && !m.toolCalls?.length && ((m.text ?? '').trim().length > 0 || (m.imageCount ?? 0) > 0))
  );
}

interface Line {
  /** Heading lines are printed whole at every step. */
  readonly heading: boolean;
  readonly speaker: string;
  /** Sentences of the message (filler sentences already dropped). */
  readonly sentences: readonly string[];
}

const SPEAKER_RE = /^([A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,2}):\s+/;

/**
 * Who said a message, and what. An earlier compaction note is no one's words: it is the
 * earlier summary speaking, without what it tells its reader about itself ("Do NOT answer …
 * this summary", which would now point at this summary).
 */
function speakerOf(m: Message): { speaker: string; body: string } {
  if (isAgentSummary(m)) return { speaker: 'Earlier summary', body: compactionNoteBody(m.text ?? '').trim() };
  const text = (m.text ?? '').trim();
  const s = SPEAKER_RE.exec(text);
  if (s?.[1]) return { speaker: s[1], body: text.slice(s[0].length) };
  return { speaker: m.role === 'user' ? 'User' : 'Assistant', body: text };
}

const WORD_RE = /[\p{L}\p{N}][\p{L}\p{N}'’&@./+-]*[\p{L}\p{N}]|[\p{L}\p{N}]/gu;

function wordsOf(sentence: string): string[] {
  return sentence.match(WORD_RE) ?? [];
}

function isNegation(w: string): boolean {
  return NEGATIONS.has(w.toLowerCase()) || NEG_CONTRACTION.test(w);
}

/** A content word: not a function word, not filler (names and numbers always are). */
function isContent(w: string): boolean {
  const l = w.toLowerCase().replace(/['’]s$/, '');
  if (isNegation(w)) return true;
  if (/\d/.test(w)) return true;
  return !FUNCTION_WORDS.has(l) && !FILLER.has(l) && !/^(?:i['’](?:m|ve|d|ll)|it['’]s|that['’]s|you['’](?:re|ve|ll|d)|we['’](?:re|ve|ll)|they['’](?:re|ve|ll)|let['’]s|there['’]s|what['’]s)$/i.test(w);
}

/** True when a sentence says nothing but pleasantries. */
function isFillerSentence(s: string): boolean {
  return !wordsOf(s).some((w) => isContent(w) && !/^[A-Z]/.test(w));
}

function splitSentences(body: string): string[] {
  return body
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function linesOf(messages: readonly Message[]): Line[] {
  const out: Line[] = [];
  let lastDay: string | undefined;
  let day: Day | undefined;
  for (const m of messages) {
    const text = (m.text ?? '').trim();
    if (m.timestamp !== undefined && Number.isFinite(m.timestamp)) {
      const t = new Date(m.timestamp);
      const d = { y: t.getUTCFullYear(), m: t.getUTCMonth(), d: t.getUTCDate() };
      const key = formatDay(d);
      if (key !== lastDay) {
        out.push({ heading: true, speaker: '', sentences: [`[${key}]`] });
        lastDay = key;
        day = d;
      }
    }
    const stated = text.length <= HEADING_MAX_CHARS ? parseDate(text) : undefined;
    if (stated) {
      day = stated;
      lastDay = formatDay(stated);
      out.push({ heading: true, speaker: '', sentences: [text] });
      continue;
    }
    const { speaker, body } = speakerOf(m);
    const kept = splitSentences(body)
      .filter((s) => !isFillerSentence(s))
      .map((s) => resolveDates(s, day));
    if (kept.length > 0) out.push({ heading: false, speaker, sentences: kept });
  }
  return out;
}

/** One sentence at a compression step; `said` holds the lowercased words printed so far. */
function compressSentence(s: string, step: number, said: Set<string>): string {
  if (step === 0) return s;
  // a resolved date is printed whole: "(the week before 8 May 2023)" means nothing cut short
  const parts = s.split(RESOLVED_RE);
  if (parts.length > 1) {
    return parts
      .map((p, i) => (i % 2 === 1 ? p : compressWords(p, step, said)))
      .filter((p) => p.length > 0)
      .join(' ');
  }
  return compressWords(s, step, said);
}

/** A date `resolveDates` added, kept whole by every compression step. */
const RESOLVED_RE = /(\((?:the (?:week|weekend) (?:before|after|of) )?(?:\d{1,2} )?(?:[A-Z][a-z]+ )?\d{4}\))/;

function compressWords(s: string, step: number, said: Set<string>): string {
  const ws = wordsOf(s);
  const kept: string[] = [];
  for (const w of ws) {
    const l = w.toLowerCase();
    const neg = isNegation(w);
    if (!neg && !isContent(w)) continue;
    if (step >= 2 && !neg && said.has(l)) continue;
      kept.push(w);
    said.add(l);
  }
  return kept.join(' ');
}

/** Words of a compressed line kept at a length threshold (names and numbers always). */
function keepLong(body: string, minLength: number): string {
  return body
    .split(/[; ]+/)
    .filter((w) => w.length >= minLength || /\d|^[A-Z]/.test(w) || isNegation(w))
    .join(' ');
}

/**
 * Render the lines at one step. From step 2 on, the lines between two date headings are
 * grouped per speaker (one `Speaker: …` line each, in order of first appearance), which saves
 * the repeated names. Lines before `cutBefore` keep only words of ≥ `minLength` characters.
 */
function render(lines: readonly Line[], step: number, header: string, cutBefore = 0, minLength = 6): string {
  const said = new Set<string>();
  const out = [header];
  let block = new Map<string, string[]>();
  const flush = (): void => {
    for (const [speaker, parts] of block) if (parts.length > 0) out.push(`${speaker}: ${parts.join('; ')}`);
    block = new Map();
  };
  lines.forEach((line, i) => {
    if (line.heading) {
      flush();
      out.push(line.sentences.join(' '));
      return;
    }
    const parts = line.sentences.map((s) => compressSentence(s, step, said)).filter((p) => p.length > 0);
    let body = parts.join(step === 0 ? ' ' : '; ');
    if (i < cutBefore) body = keepLong(body, minLength);
    if (body.length === 0) return;
    if (step < 2) {
      out.push(`${line.speaker}: ${body}`);
      return;
    }
    const list = block.get(line.speaker);
    if (list) list.push(body);
    else block.set(line.speaker, [body]);
  });
  flush();
  return out.join('\n');
}

/** Summary header: what was replaced (and any images, with the recall handle), without naming internal section ids. */
function headerOf(messages: readonly Message[], step: number, handle?: string): string {
  const images = messages.reduce((n, m) => n + (m.imageCount ?? 0), 0);
  return `Earlier conversation, ${messages.length} messages${step === 0 ? ' (filler dropped)' : ', content words'}:${images > 0 ? ` ${imageNote(images, handle)}` : ''}`;
}

/** The span of `messages` rendered at one compression step (0–3), without a budget. */
export function renderSpan(messages: readonly Message[], step: number): string {
  return render(linesOf(messages), step, headerOf(messages, step));
}

/** The span summary of `input` (conversational messages), within `input.maxTokens`. */
export function spanSummary(input: SummarizeInput): string {
  const maxChars = Math.max(120, Math.floor((input.maxTokens ?? 300) * CHARS_PER_TOKEN));
  const lines = linesOf(input.messages);
  let text = '';
  for (let step = 0; step <= 2; step++) {
    text = render(lines, step, headerOf(input.messages, step, input.handle));
    if (text.length <= maxChars) return text;
  }
  // Still too long: shorter words go, from the oldest lines on, until it fits.
  const header = headerOf(input.messages, 2, input.handle);
  for (const minLength of [4, 5, 6, 7, 8]) {
    let lo = 0;
    let hi = lines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (render(lines, 2, header, mid, minLength).length <= maxChars) hi = mid;
      else lo = mid + 1;
    }
    text = render(lines, 2, header, lo, minLength);
    if (text.length <= maxChars) return text;
  }
  // Never over budget: cut whole lines from the oldest end, saying so.
  const body = text.split('\n').slice(1);
  while (body.length > 1 && [header, '(older lines omitted)', ...body].join('\n').length > maxChars) body.shift();
  return [header, '(older lines omitted)', ...body].join('\n');
}
