// The WebShop catalogue and its goals, generated from a seed (WebShop ships 1.18M scraped Amazon
// products and downloads them; here products and goals come from src/envs/webshop/vocabulary.ts).
import { Rng } from '../../util/index.js';
import { BRAND_SYLLABLES, DEPARTMENTS, EXCLUSIVE_ATTRIBUTES, REVIEW_WORDS } from './vocabulary.js';

/** One product of the catalogue. Option values are unique within a product (clicks name them). */
export interface Product {
  /** WebShop-style id (`B0` + 8 characters), shown on result pages and clicked in lowercase. */
  asin: string;
  /** The department (WebShop's `category`). */
  category: string;
  /** The product type, the noun a shopper asks for (WebShop's `product_category` leaf). */
  type: string;
  title: string;
  brand: string;
  price: number;
  description: string;
  features: string[];
  /** Goal attributes this product has. */
  attributes: string[];
  /** Option dimension -> available values, e.g. `{color: ['black', 'red'], size: ['small']}`. */
  options: Record<string, string[]>;
  reviews: string[];
}

/** A shopping goal made from one product, as WebShop's synthetic goals are. */
export interface Goal {
  /** The product the goal was made from (one of possibly many that satisfy it). */
  asin: string;
  category: string;
  type: string;
  attributes: string[];
  /** Option dimension -> wanted value. */
  options: Record<string, string>;
  /** Price bound in dollars ("price lower than X dollars"). */
  priceUpper: number;
  /** The instruction shown to the agent. */
  instruction: string;
}

export interface Catalogue {
  products: Product[];
  byAsin: Map<string, Product>;
  goals: Goal[];
}

const cache = new Map<string, Catalogue>();

/**
 * The catalogue for `(seed, numProducts)`, built once per process and cached (generation takes tens of
 * milliseconds for a few thousand products). Products are spread evenly over the 13 departments; one goal
 * is made per product.
 */
export function catalogue(seed: number, numProducts: number): Catalogue {
  const key = `${seed}:${numProducts}`;
  let c = cache.get(key);
  if (!c) {
    c = generateCatalogue(seed, numProducts);
    cache.set(key, c);
  }
  return c;
}

function generateCatalogue(seed: number, numProducts: number): Catalogue {
  const rng = new Rng(seed);
  const brands = makeBrands(rng, 120);
  const products: Product[] = [];
  const byAsin = new Map<string, Product>();
  for (let i = 0; i < numProducts; i++) {
    const p = makeProduct(rng, DEPARTMENTS[i % DEPARTMENTS.length]!.name, brands, byAsin);
    products.push(p);
    byAsin.set(p.asin, p);
  }
  const goalRng = new Rng(seed ^ 0x5eed);
  const goals = products.map((p) => makeGoal(goalRng, p));
  // A fixed permutation so splits mix departments (as RAGEN permutes WebShop's goals with Random(42)).
  goalRng.shuffle(goals);
  return { products, byAsin, goals };
}

function makeBrands(rng: Rng, n: number): string[] {
  const out = new Set<string>();
  while (out.size < n) {
    const parts = 2 + rng.int(2);
    let name = '';
    for (let i = 0; i < parts; i++) name += rng.choice(BRAND_SYLLABLES);
    out.add(name[0]!.toUpperCase() + name.slice(1));
  }
  return [...out];
}

const ASIN_CHARS = '0123456789ABCDEFGHJKLMNPQRSTUVWXYZ';

function makeAsin(rng: Rng, taken: Map<string, Product>): string {
  for (;;) {
    let s = 'B0';
    for (let i = 0; i < 8; i++) s += ASIN_CHARS[rng.int(ASIN_CHARS.length)];
    if (!taken.has(s)) return s;
  }
}

/** k distinct elements of `items`, in the order they appear there. */
function sample<T>(rng: Rng, items: readonly T[], k: number): T[] {
  const idx = rng
    .shuffle(items.map((_, i) => i))
    .slice(0, k)
    .sort((a, b) => a - b);
  return idx.map((i) => items[i]!);
}

/** Up to k attributes in list order, no two from the same exclusive group. */
function sampleCompatible(rng: Rng, items: readonly string[], k: number): string[] {
  const picked: string[] = [];
  for (const a of sample(rng, items, items.length)) {
    if (picked.length === k) break;
    const group = EXCLUSIVE_ATTRIBUTES.find((g) => g.includes(a));
    if (group && picked.some((p) => group.includes(p))) continue;
    picked.push(a);
  }
  return picked;
}

const titleCase = (s: string): string => s.replace(/\b[a-z]/g, (c) => c.toUpperCase());

function makeProduct(rng: Rng, department: string, brands: string[], taken: Map<string, Product>): Product {
  const dep = DEPARTMENTS.find((d) => d.name === department)!;
  const type = rng.choice(dep.types);
  const brand = rng.choice(brands);
  const attributes = sampleCompatible(rng, dep.attributes, 2 + rng.int(3));
  const material = rng.choice(dep.materials);
  const options: Record<string, string[]> = {};
  for (const dim of dep.options) {
    if (rng.random() < 0.15) continue; // some products come in one variant only
    options[dim.name] = sample(rng, dim.values, 2 + rng.int(Math.min(4, dim.values.length - 1)));
  }
  const [lo, hi] = dep.price;
  const price = Math.round((lo + rng.random() * (hi - lo)) * 100) / 100;
  // Title words: one or two attributes, skipping any that repeats a word of the type ("high protein protein bars").
  const typeWords = new Set(type.split(' '));
  const shown = attributes.filter((a) => !a.split(' ').some((w) => typeWords.has(w))).slice(0, 1 + rng.int(2));
  const title = `${[brand, ...shown.map(titleCase), titleCase(type)].join(' ')}, ${titleCase(material)}${rng.random() < 0.5 ? ` - ${titleCase(attributes.at(-1)!)}` : ''}`;
  const description =
    `The ${brand} ${type} is made of ${material} for everyday use. ` +
    `It is ${attributes.slice(0, -1).join(', ')}${attributes.length > 1 ? ' and ' : ''}${attributes.at(-1)}. ` +
    (Object.keys(options).length > 0
      ? `Available in ${Object.entries(options)
          .map(([k, v]) => `${v.length} ${k === 'color' ? 'colors' : `${k}s`}`)
          .join(' and ')}.`
      : 'Available in one variant.');
  const features = [...attributes.map((a) => `${titleCase(a)}: designed for ${dep.name}.`), `Material: ${material}.`];
  const reviews = [
    `${rng.intBetween(3, 5)} stars: ${rng.choice(REVIEW_WORDS)}.`,
    `${rng.intBetween(1, 5)} stars: ${rng.choice(REVIEW_WORDS)}.`,
  ];
  return {
    asin: makeAsin(rng, taken),
    category: dep.name,
    type,
    title,
    brand,
    price,
    description,
    features,
    attributes,
    options,
    reviews,
  };
}

const TEMPLATES = [
  (t: string, a: string, o: string, p: string) =>
    `i'm looking for ${a} ${t}${o ? ` with ${o}` : ''}, and price lower than ${p} dollars`,
  (t: string, a: string, o: string, p: string) =>
    `find me ${a} ${t}${o ? ` in ${o}` : ''}, priced lower than ${p} dollars`,
  (t: string, a: string, o: string, p: string) =>
    `i need ${t} that is ${a}${o ? `, ${o}` : ''}, and price lower than ${p} dollars`,
  (t: string, a: string, o: string, p: string) =>
    `i want to buy ${a} ${t}${o ? `; ${o}` : ''}; price lower than ${p} dollars`,
];

/** A goal from product `p`: 1-3 of its attributes, one value of each option dimension (each kept with
 *  probability 0.8), and a price bound 0-30 dollars above the next multiple of ten. */
function makeGoal(rng: Rng, p: Product): Goal {
  const attributes = sample(rng, p.attributes, 1 + rng.int(Math.min(3, p.attributes.length)));
  const options: Record<string, string> = {};
  for (const [dim, values] of Object.entries(p.options)) if (rng.random() < 0.8) options[dim] = rng.choice(values);
  const priceUpper = Math.ceil((p.price + 0.01) / 10) * 10 + 10 * rng.int(4);
  const attrText = attributes.join(' and ');
  const optText = Object.entries(options)
    .map(([k, v]) => `${k}: ${v}`)
    .join(' and ');
  const instruction = rng.choice(TEMPLATES)(p.type, attrText, optText, priceUpper.toFixed(2));
  return { asin: p.asin, category: p.category, type: p.type, attributes, options, priceUpper, instruction };
}
