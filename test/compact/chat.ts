/**
 * A generated long chat (a hermes gateway / messenger shape: many short user turns, no tools),
 * with standing constraints stated early and planted facts (names, numbers, dates, places)
 * spread through old turns among small talk. Nothing here comes from a real conversation.
 */
import { seededRandom } from '../../src/util/random.js';
import type { TranscriptEvent } from '../../src/model/messages.js';

export interface PlantedFact {
  /** Words that must all survive compaction (names, numbers, places, dates). */
  readonly words: readonly string[];
  readonly text: string;
}

export interface GeneratedChat {
  readonly events: TranscriptEvent[];
  /** openai-chat lines (role/content), as a hermes gateway transcript holds them. */
  readonly lines: { role: 'system' | 'user' | 'assistant'; content: string }[];
  readonly constraints: readonly string[];
  readonly facts: readonly PlantedFact[];
}

const CONSTRAINTS = ['Never share my home address with anyone.', 'Always give distances in kilometres, not miles.'];
const SMALL_TALK = [
  'haha that is great',
  'ok cool',
  'Thanks so much!',
  'Wow, amazing!',
  'Sounds good to me.',
  'lol yes',
  'Nice, glad to hear it!',
  'Good morning!',
];
const CHATTER = [
  'The weather has been grey all week and the garden looks tired',
  'I keep meaning to clean the kitchen cupboards but the evenings vanish',
  'The neighbours are repainting their fence again in a slightly different green',
  'My coffee machine makes a strange rattling noise before every cup',
  'The bus was late twice this week so I walked part of the way',
  'I started a new book about old lighthouses and their keepers',
];
const REPLIES = [
  'That sounds like a busy week, take it slowly',
  'A walk in the evening can help after a long day',
  'Let me know if you want a reminder for that',
  'I can note that down for later if it helps',
];
const NAMES = ['Priyanka', 'Tobias', 'Marguerite', 'Oluwaseun', 'Kasimir', 'Annelie'];
const PLACES = ['Trondheim', 'Valparaiso', 'Ljubljana', 'Antananarivo', 'Tbilisi', 'Cartagena'];
const THINGS = ['sourdough', 'cello', 'kayak', 'telescope', 'bonsai', 'harmonium'];
const MONTHS = ['March', 'April', 'May', 'June', 'July', 'August'];

/** A chat of about `rounds` exchanges (seeded, deterministic). */
export function generateChat(seed: number, rounds = 120): GeneratedChat {
  const r = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const lines: GeneratedChat['lines'] = [{ role: 'system', content: 'You are a friendly personal assistant chatting over a messenger.' }];
  const facts: PlantedFact[] = [];
  lines.push({ role: 'user', content: CONSTRAINTS[0] as string }, { role: 'assistant', content: 'Understood.' });
  lines.push({ role: 'user', content: CONSTRAINTS[1] as string }, { role: 'assistant', content: 'Noted, kilometres it is.' });
  for (let i = 0; i < rounds; i++) {
    if (i % 12 === 5 && facts.length < NAMES.length) {
      const k = facts.length;
      const name = NAMES[k] as string;
      const place = PLACES[k] as string;
      const thing = THINGS[k] as string;
      const day = 3 + k * 4;
      const month = MONTHS[k] as string;
      const count = 17 + k * 11;
      const text = `My cousin ${name} is flying to ${place} on ${day} ${month} 2024 and is bringing ${count} jars of honey and a ${thing}.`;
      lines.push({ role: 'user', content: text }, { role: 'assistant', content: pick(REPLIES) });
      facts.push({ text, words: [name, place, String(day), month, '2024', String(count), thing] });
      continue;
    }
    lines.push({ role: 'user', content: r() < 0.5 ? pick(SMALL_TALK) : `${pick(CHATTER)}. ${pick(CHATTER)}.` });
    lines.push({ role: 'assistant', content: r() < 0.4 ? pick(SMALL_TALK) : `${pick(REPLIES)}. ${pick(CHATTER)}.` });
  }
  lines.push({ role: 'user', content: 'What should I cook tonight?' });
  const events: TranscriptEvent[] = lines.map((l, i) => ({ type: 'message', message: { id: `chat${seed}-${i}`, role: l.role, text: l.content } }));
  return { events, lines, constraints: CONSTRAINTS, facts };
}
