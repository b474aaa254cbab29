// SearchQA's questions over the generated world: single-hop, and two-hop bridge and comparison questions
// as HotpotQA has them, each with its answer, its gold passages and the searches that find them.
import { Rng } from '../../util/index.js';
import { corpus, type Corpus } from './corpus.js';

export type QuestionType = 'single' | 'bridge' | 'comparison';

export interface Question {
  question: string;
  answer: string;
  /** Other accepted answers (question files may list several); the best-scoring one counts. */
  aliases?: string[];
  /** `single`, `bridge`, `comparison`; a question file's own `type`, else `external`. */
  type: QuestionType | (string & {});
  /** Ids of the passages that together state the answer. */
  gold: string[];
  /** The entity names an oracle searches for, in order (the bridge entity second). */
  queries: string[];
}

/** Questions generated per world. */
export const NUM_QUESTIONS = 8000;

const cache = new Map<number, Question[]>();

/** The questions of world `seed` (a fixed shuffle of all types), generated once and cached. */
export function questions(seed: number): Question[] {
  let q = cache.get(seed);
  if (!q) {
    q = generateQuestions(corpus(seed), new Rng(seed ^ 0x9a11));
    cache.set(seed, q);
  }
  return q;
}

function generateQuestions(c: Corpus, rng: Rng): Question[] {
  const w = c.world;
  const gold = (...keys: string[]): string[] => keys.map((k) => c.key.get(k)!);
  const person = new Map(w.people.map((p) => [p.name, p]));
  const city = new Map(w.cities.map((x) => [x.name, x]));
  const company = new Map(w.companies.map((x) => [x.name, x]));
  const single: (() => Question)[] = [
    () => {
      const p = rng.choice(w.people);
      return {
        question: `In which city was ${p.name} born?`,
        answer: p.birthCity,
        type: 'single',
        gold: gold(`person:${p.name}:bio`),
        queries: [p.name],
      };
    },
    () => {
      const p = rng.choice(w.people);
      return {
        question: `In what year was ${p.name} born?`,
        answer: String(p.born),
        type: 'single',
        gold: gold(`person:${p.name}:bio`),
        queries: [p.name],
      };
    },
    () => {
      const x = rng.choice(w.companies);
      return {
        question: `In what year was ${x.name} founded?`,
        answer: String(x.founded),
        type: 'single',
        gold: gold(`company:${x.name}:main`),
        queries: [x.name],
      };
    },
    () => {
      const x = rng.choice(w.companies);
      return {
        question: `In which city is ${x.name} headquartered?`,
        answer: x.headquarters,
        type: 'single',
        gold: gold(`company:${x.name}:hq`),
        queries: [x.name],
      };
    },
    () => {
      const f = rng.choice(w.films);
      return {
        question: `Who directed ${f.title}?`,
        answer: f.director,
        type: 'single',
        gold: gold(`film:${f.title}:main`),
        queries: [f.title],
      };
    },
    () => {
      const x = rng.choice(w.cities);
      return {
        question: `In which country is ${x.name}?`,
        answer: x.country,
        type: 'single',
        gold: gold(`city:${x.name}:main`),
        queries: [x.name],
      };
    },
    () => {
      const x = rng.choice(w.countries);
      return {
        question: `What is the capital of ${x.name}?`,
        answer: x.capital,
        type: 'single',
        gold: gold(`country:${x.name}:main`),
        queries: [x.name],
      };
    },
  ];
  const bridge: (() => Question)[] = [
    () => {
      const p = rng.choice(w.people);
      return {
        question: `In which country was ${p.name} born?`,
        answer: city.get(p.birthCity)!.country,
        type: 'bridge',
        gold: gold(`person:${p.name}:bio`, `city:${p.birthCity}:main`),
        queries: [p.name, p.birthCity],
      };
    },
    () => {
      const x = rng.choice(w.companies);
      return {
        question: `In what year was the founder of ${x.name} born?`,
        answer: String(person.get(x.founder)!.born),
        type: 'bridge',
        gold: gold(`company:${x.name}:main`, `person:${x.founder}:bio`),
        queries: [x.name, x.founder],
      };
    },
    () => {
      const f = rng.choice(w.films);
      return {
        question: `In which city was the director of ${f.title} born?`,
        answer: person.get(f.director)!.birthCity,
        type: 'bridge',
        gold: gold(`film:${f.title}:main`, `person:${f.director}:bio`),
        queries: [f.title, f.director],
      };
    },
    () => {
      const f = rng.choice(w.films);
      return {
        question: `In what year was the company that produced ${f.title} founded?`,
        answer: String(company.get(f.studio)!.founded),
        type: 'bridge',
        gold: gold(`film:${f.title}:studio`, `company:${f.studio}:main`),
        queries: [f.title, f.studio],
      };
    },
    () => {
      const x = rng.choice(w.companies);
      return {
        question: `Which river flows through the city where ${x.name} is headquartered?`,
        answer: city.get(x.headquarters)!.river,
        type: 'bridge',
        gold: gold(`company:${x.name}:hq`, `city:${x.headquarters}:geo`),
        queries: [x.name, x.headquarters],
      };
    },
  ];
  const pair = <T>(items: readonly T[], differ: (a: T, b: T) => boolean): [T, T] => {
    for (;;) {
      const a = rng.choice(items);
      const b = rng.choice(items);
      if (a !== b && differ(a, b)) return [a, b];
    }
  };
  const comparison: (() => Question)[] = [
    () => {
      const [a, b] = pair(w.people, (x, y) => x.born !== y.born);
      return {
        question: `Who was born first, ${a.name} or ${b.name}?`,
        answer: a.born < b.born ? a.name : b.name,
        type: 'comparison',
        gold: gold(`person:${a.name}:bio`, `person:${b.name}:bio`),
        queries: [a.name, b.name],
      };
    },
    () => {
      const [a, b] = pair(w.companies, (x, y) => x.founded !== y.founded);
      return {
        question: `Which company was founded earlier, ${a.name} or ${b.name}?`,
        answer: a.founded < b.founded ? a.name : b.name,
        type: 'comparison',
        gold: gold(`company:${a.name}:main`, `company:${b.name}:main`),
        queries: [a.name, b.name],
      };
    },
    () => {
      const [a, b] = pair(w.cities, (x, y) => x.population !== y.population);
      return {
        question: `Which city has the larger population, ${a.name} or ${b.name}?`,
        answer: a.population > b.population ? a.name : b.name,
        type: 'comparison',
        gold: gold(`city:${a.name}:geo`, `city:${b.name}:geo`),
        queries: [a.name, b.name],
      };
    },
    () => {
      const same = rng.random() < 0.5;
      const [a, b] = pair(w.people, (x, y) => (x.occupation === y.occupation) === same);
      return {
        question: `Do ${a.name} and ${b.name} have the same occupation?`,
        answer: same ? 'yes' : 'no',
        type: 'comparison',
        gold: gold(`person:${a.name}:bio`, `person:${b.name}:bio`),
        queries: [a.name, b.name],
      };
    },
  ];
  const out: Question[] = [];
  const seen = new Set<string>();
  while (out.length < NUM_QUESTIONS) {
    const r = rng.random();
    const pool = r < 0.4 ? single : r < 0.75 ? bridge : comparison;
    const q = rng.choice(pool)();
    if (seen.has(q.question)) continue;
    seen.add(q.question);
    out.push(q);
  }
  return out;
}
