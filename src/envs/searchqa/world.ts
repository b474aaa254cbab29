// A fictional world for SearchQA: countries, cities, people, companies and films with mutually consistent
// facts (a founder is born before the company, a director before the film, a city lies in one country).
import { Rng } from '../../util/index.js';

export interface Country {
  name: string;
  capital: string;
  /** Year of independence. */
  year: number;
  language: string;
}
export interface City {
  name: string;
  country: string;
  population: number;
  founded: number;
  river: string;
}
export interface Person {
  name: string;
  born: number;
  birthCity: string;
  occupation: string;
  /** Where they studied (another city). */
  studyCity: string;
}
export interface Company {
  name: string;
  founded: number;
  founder: string;
  headquarters: string;
  industry: string;
}
export interface Film {
  title: string;
  year: number;
  director: string;
  genre: string;
  /** The company that produced it. */
  studio: string;
}

export interface World {
  countries: Country[];
  cities: City[];
  people: Person[];
  companies: Company[];
  films: Film[];
}

/** How many entities of each kind a world has (about 10,500 passages with the defaults). */
export const WORLD_SIZE = { countries: 40, cities: 500, people: 3000, companies: 600, films: 1400 } as const;

const ONSETS = [
  'b',
  'd',
  'f',
  'g',
  'h',
  'k',
  'l',
  'm',
  'n',
  'p',
  'r',
  's',
  't',
  'v',
  'z',
  'br',
  'dr',
  'kr',
  'st',
  'th',
  'sh',
  'gr',
  'tr',
  'vel',
  'qu',
];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ei', 'ia', 'y'];
const CODAS = ['', '', 'n', 'r', 's', 'l', 'm', 'th', 'nd', 'rk', 'sk', 'x'];
const CITY_SUFFIX = ['ford', 'holm', 'burg', 'mouth', 'vale', 'stad', 'haven', 'port', 'wick', 'ton'];
const COMPANY_SUFFIX = ['Industries', 'Systems', 'Works', 'Holdings', 'Labs', 'Group', 'Dynamics', 'Motors'];
const FILM_ADJ = [
  'Silent',
  'Crimson',
  'Hollow',
  'Distant',
  'Broken',
  'Golden',
  'Winter',
  'Last',
  'Hidden',
  'Burning',
  'Quiet',
  'Iron',
];
const FILM_NOUN = [
  'Harbor',
  'Orchard',
  'Signal',
  'Meridian',
  'Lantern',
  'Tide',
  'Garden',
  'Crossing',
  'Archive',
  'Summit',
  'Mirror',
  'Frontier',
];
const OCCUPATIONS = [
  'architect',
  'painter',
  'physicist',
  'novelist',
  'engineer',
  'composer',
  'economist',
  'botanist',
  'sculptor',
  'diplomat',
  'chemist',
  'film director',
  'entrepreneur',
  'mathematician',
  'poet',
];
const INDUSTRIES = [
  'shipbuilding',
  'software',
  'textile',
  'pharmaceutical',
  'aerospace',
  'publishing',
  'mining',
  'food processing',
  'film production',
  'railway',
];
const GENRES = ['drama', 'comedy', 'thriller', 'documentary', 'science fiction', 'western', 'musical', 'romance'];
const LANGUAGES = ['Velish', 'Ordanic', 'Maruvian', 'Tessic', 'Kalori', 'Brenish', 'Austrine', 'Quellan'];

function word(rng: Rng, syllables: number): string {
  let s = '';
  for (let i = 0; i < syllables; i++) s += rng.choice(ONSETS) + rng.choice(VOWELS);
  s += rng.choice(CODAS);
  return s[0]!.toUpperCase() + s.slice(1);
}

/** Draws names until one is new, so every entity name in the world is distinct (questions name them). */
function uniqueName(taken: Set<string>, make: () => string): string {
  for (;;) {
    const name = make();
    const key = name.toLowerCase();
    if (!taken.has(key)) {
      taken.add(key);
      return name;
    }
  }
}

const cache = new Map<number, World>();

/** The world for `seed`, generated once per process and cached. */
export function world(seed: number): World {
  let w = cache.get(seed);
  if (!w) {
    w = generateWorld(seed);
    cache.set(seed, w);
  }
  return w;
}

function generateWorld(seed: number): World {
  const rng = new Rng(seed);
  const taken = new Set<string>();
  const countries: Country[] = [];
  for (let i = 0; i < WORLD_SIZE.countries; i++) {
    countries.push({
      name: uniqueName(taken, () => `${word(rng, 2)}ia`),
      capital: '',
      year: rng.intBetween(1600, 1960),
      language: rng.choice(LANGUAGES),
    });
  }
  const cities: City[] = [];
  for (let i = 0; i < WORLD_SIZE.cities; i++) {
    const country = countries[i % countries.length]!;
    const city: City = {
      name: uniqueName(taken, () => `${word(rng, 1 + rng.int(2))}${rng.choice(CITY_SUFFIX)}`),
      country: country.name,
      population: rng.intBetween(8, 4000) * 1000 + rng.int(1000),
      founded: rng.intBetween(900, 1800),
      river: '',
    };
    if (!country.capital) country.capital = city.name;
    cities.push(city);
  }
  for (const c of cities) c.river = `${word(rng, 2)} River`;
  const people: Person[] = [];
  for (let i = 0; i < WORLD_SIZE.people; i++) {
    const birthCity = rng.choice(cities);
    let studyCity = rng.choice(cities);
    while (studyCity === birthCity) studyCity = rng.choice(cities);
    people.push({
      name: uniqueName(taken, () => `${word(rng, 1 + rng.int(2))} ${word(rng, 2)}`),
      born: rng.intBetween(Math.max(1820, birthCity.founded + 1), 1995),
      birthCity: birthCity.name,
      occupation: rng.choice(OCCUPATIONS),
      studyCity: studyCity.name,
    });
  }
  const companies: Company[] = [];
  for (let i = 0; i < WORLD_SIZE.companies; i++) {
    const founder = rng.choice(people.filter((_, j) => j % 5 === i % 5)); // spread founders, cheap draw
    companies.push({
      name: uniqueName(taken, () => `${word(rng, 2)} ${rng.choice(COMPANY_SUFFIX)}`),
      founded: rng.intBetween(founder.born + 20, Math.min(2024, founder.born + 70)),
      founder: founder.name,
      headquarters: rng.choice(cities).name,
      industry: rng.choice(INDUSTRIES),
    });
  }
  // A film is made after its studio was founded, by a director aged 20-70 at the time.
  const byBirth = [...people].sort((a, b) => a.born - b.born);
  const films: Film[] = [];
  for (let i = 0; i < WORLD_SIZE.films; i++) {
    const studio = rng.choice(companies);
    const year = rng.intBetween(studio.founded, Math.min(2025, studio.founded + 40));
    const lo = lowerBound(byBirth, year - 70);
    const hi = lowerBound(byBirth, year - 19);
    const director = hi > lo ? byBirth[lo + rng.int(hi - lo)]! : byBirth[0]!;
    films.push({
      title: uniqueName(taken, () => `The ${rng.choice(FILM_ADJ)} ${rng.choice(FILM_NOUN)} of ${word(rng, 2)}`),
      year,
      director: director.name,
      genre: rng.choice(GENRES),
      studio: studio.name,
    });
  }
  // Occupations follow from what people did: directors direct, founders found.
  const byName = new Map(people.map((p) => [p.name, p]));
  for (const c of companies) byName.get(c.founder)!.occupation = 'entrepreneur';
  for (const f of films) byName.get(f.director)!.occupation = 'film director';
  return { countries, cities, people, companies, films };
}

/** Index of the first person (sorted by birth year) born in `year` or later. */
function lowerBound(sorted: readonly Person[], year: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.born < year) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
