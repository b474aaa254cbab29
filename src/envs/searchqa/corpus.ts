// The SearchQA corpus: two short passages per entity of the generated world (about 11,000 in all),
// each stating some of its facts, titled like Wikipedia paragraphs ("Title"\ntext, as wiki-18's contents).
import { world, type World } from './world.js';

/** One retrievable passage. */
export interface Passage {
  /** Stable id: `d` + index. */
  id: string;
  /** The entity it is about. */
  title: string;
  text: string;
}

export interface Corpus {
  world: World;
  passages: Passage[];
  byId: Map<string, Passage>;
  /** `kind:name:part` (e.g. `person:Ana Bel:bio`) -> passage id, to name the gold passages of a question. */
  key: Map<string, string>;
}

/** The text a retriever returns for a passage (wiki-18 style: quoted title, newline, text). */
export const passageContent = (p: Passage): string => `"${p.title}"\n${p.text}`;

const cache = new Map<number, Corpus>();

/** The corpus of world `seed`, built once per process and cached. */
export function corpus(seed: number): Corpus {
  let c = cache.get(seed);
  if (!c) {
    c = buildCorpus(world(seed));
    cache.set(seed, c);
  }
  return c;
}

const article = (word: string): string => (/^[aeiou]/.test(word) ? 'an' : 'a');
const withCommas = (n: number): string => n.toLocaleString('en-US');

function buildCorpus(w: World): Corpus {
  const passages: Passage[] = [];
  const key = new Map<string, string>();
  const add = (k: string, title: string, text: string): void => {
    const id = `d${passages.length}`;
    passages.push({ id, title, text });
    key.set(k, id);
  };
  const citiesOf = new Map<string, string[]>();
  for (const c of w.cities) citiesOf.set(c.country, [...(citiesOf.get(c.country) ?? []), c.name]);
  const directed = new Map<string, string[]>();
  for (const f of w.films) directed.set(f.director, [...(directed.get(f.director) ?? []), f.title]);
  const founded = new Map(w.companies.map((c) => [c.founder, c]));
  const produced = new Map<string, number>();
  for (const f of w.films) produced.set(f.studio, (produced.get(f.studio) ?? 0) + 1);

  for (const c of w.countries) {
    add(
      `country:${c.name}:main`,
      c.name,
      `${c.name} is a country whose capital is ${c.capital}. It became independent in ${c.year}.`,
    );
    const some = citiesOf.get(c.name)!.slice(1, 4);
    add(
      `country:${c.name}:lang`,
      c.name,
      `The official language of ${c.name} is ${c.language}. Besides the capital, its cities include ${some.join(', ')}.`,
    );
  }
  for (const c of w.cities) {
    add(`city:${c.name}:main`, c.name, `${c.name} is a city in ${c.country}. It was founded in ${c.founded}.`);
    add(
      `city:${c.name}:geo`,
      c.name,
      `${c.name} lies on the ${c.river} and has a population of ${withCommas(c.population)}.`,
    );
  }
  for (const p of w.people) {
    add(
      `person:${p.name}:bio`,
      p.name,
      `${p.name} (born ${p.born}) is ${article(p.occupation)} ${p.occupation} who was born in ${p.birthCity}.`,
    );
    const film = directed.get(p.name);
    const company = founded.get(p.name);
    const work = film
      ? ` ${p.name} directed ${film.map((t) => `"${t}"`).join(', ')}.`
      : company
        ? ` ${p.name} is known as a founder in the ${company.industry} industry.`
        : '';
    add(`person:${p.name}:career`, p.name, `${p.name} studied in ${p.studyCity}.${work}`);
  }
  for (const c of w.companies) {
    add(
      `company:${c.name}:main`,
      c.name,
      `${c.name} is ${article(c.industry)} ${c.industry} company founded in ${c.founded} by ${c.founder}.`,
    );
    const films = produced.get(c.name) ?? 0;
    add(
      `company:${c.name}:hq`,
      c.name,
      `${c.name} is headquartered in ${c.headquarters}.${films > 0 ? ` It has produced ${films} film${films > 1 ? 's' : ''}.` : ''}`,
    );
  }
  for (const f of w.films) {
    add(`film:${f.title}:main`, f.title, `${f.title} is a ${f.year} ${f.genre} film directed by ${f.director}.`);
    add(`film:${f.title}:studio`, f.title, `${f.title} was produced by ${f.studio}.`);
  }
  return { world: w, passages, byId: new Map(passages.map((p) => [p.id, p])), key };
}
