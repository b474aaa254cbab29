// Generates the shipped MetaMathQA-format sample: seeded arithmetic word problems with worked answers.
// Run `npx tsx scripts/gen-metamathqa.ts` (rewrites data/metamathqa/{train,val}.jsonl; same seed -> same bytes).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Rng } from '../src/util/rng.js';

/** One MetaMathQA-format record; `type` names the template (MetaMathQA's field names its augmentation). */
export interface MathRecord {
  query: string;
  response: string;
  type: string;
}

const NAMES = [
  'Ava',
  'Ben',
  'Chloe',
  'Diego',
  'Emma',
  'Farid',
  'Grace',
  'Hiro',
  'Isla',
  'Jonas',
  'Keiko',
  'Liam',
  'Maya',
  'Noah',
  'Olga',
  'Priya',
  'Quinn',
  'Rosa',
  'Sam',
  'Tariq',
  'Uma',
  'Victor',
  'Wen',
  'Yara',
  'Zoe',
];
const ITEMS: [string, string][] = [
  ['notebook', 'notebooks'],
  ['pen', 'pens'],
  ['apple', 'apples'],
  ['sandwich', 'sandwiches'],
  ['comic book', 'comic books'],
  ['candle', 'candles'],
  ['mug', 'mugs'],
  ['T-shirt', 'T-shirts'],
  ['plant', 'plants'],
  ['ticket', 'tickets'],
];
const THINGS = ['widgets', 'bottles', 'bricks', 'toys', 'candles', 'chairs', 'jars of jam', 'loaves of bread'];
const VEHICLES = ['car', 'train', 'bus', 'cyclist', 'boat', 'truck'];

/** Money and decimals without float noise: up to 2 decimals, trailing zeros dropped. */
function num(x: number): string {
  const r = Math.round(x * 100) / 100;
  return Number.isInteger(r) ? String(r) : r.toFixed(2).replace(/0$/, '');
}
function money(x: number): string {
  const cents = Math.round(x * 100) / 100;
  const digits = Number.isInteger(cents) ? 0 : 2;
  return `$${cents.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}
function gcd(a: number, b: number): number {
  return b === 0 ? Math.abs(a) : gcd(b, a % b);
}
function frac(n: number, d: number): string {
  const g = gcd(n, d);
  return d / g === 1 ? String(n / g) : `${n / g}/${d / g}`;
}
function grouped(n: number): string {
  return n.toLocaleString('en-US');
}

type Template = (r: Rng) => { query: string; steps: string; answer: string } | undefined;

const TEMPLATES: Record<string, Template> = {
  shopping_change(r) {
    const name = r.choice(NAMES);
    const [i1, i2] = r.shuffle([...ITEMS]) as [string, string][];
    const a = r.intBetween(2, 6),
      b = r.intBetween(1, 4);
    const p = r.intBetween(4, 40) / 4,
      q = r.intBetween(4, 60) / 4;
    const total = a * p + b * q;
    const bill = [20, 50, 100].find((x) => x > total);
    if (bill === undefined) return undefined;
    return {
      query: `${name} buys ${a} ${i1![1]} at ${money(p)} each and ${b} ${i2![1]} at ${money(q)} each, paying with a $${bill} bill. How much change, in dollars, does ${name} get?`,
      steps: `The ${i1![1]} cost ${a} x ${money(p)} = ${money(a * p)} and the ${i2![1]} cost ${b} x ${money(q)} = ${money(b * q)}, so the total is ${money(total)}. The change is $${bill} - ${money(total)} = ${money(bill - total)}.`,
      answer: num(bill - total),
    };
  },
  discount(r) {
    const name = r.choice(NAMES);
    const [one, many] = r.choice(ITEMS);
    const d = r.choice([10, 20, 25, 30, 40, 50]);
    const p = r.intBetween(2, 30) * 2;
    const n = r.intBetween(2, 9);
    const each = (p * (100 - d)) / 100;
    return {
      query: `A ${one} normally costs $${p}. During a sale everything is ${d}% off. How much does ${name} pay, in dollars, for ${n} ${many}?`,
      steps: `${d}% of $${p} is ${money((p * d) / 100)}, so one ${one} costs $${p} - ${money((p * d) / 100)} = ${money(each)}. For ${n} ${many}: ${n} x ${money(each)} = ${money(n * each)}.`,
      answer: num(n * each),
    };
  },
  distance(r) {
    const v = r.intBetween(2, 10) * 12;
    const h = r.intBetween(1, 5);
    const m = r.choice([15, 20, 30, 40, 45]);
    const vehicle = r.choice(VEHICLES);
    const d = v * h + (v * m) / 60;
    return {
      query: `A ${vehicle} travels at a steady ${v} kilometers per hour for ${h} hour${h > 1 ? 's' : ''} and ${m} minutes. How many kilometers does it travel?`,
      steps: `${m} minutes is ${frac(m, 60)} of an hour, so the time is ${h} + ${frac(m, 60)} hours. The distance is ${v} x ${h} + ${v} x ${frac(m, 60)} = ${v * h} + ${num((v * m) / 60)} = ${num(d)} kilometers.`,
      answer: num(d),
    };
  },
  work_rate(r) {
    const rate = r.intBetween(3, 40);
    const k = r.intBetween(2, 12);
    const thing = r.choice(THINGS);
    const machines = r.intBetween(2, 4);
    const total = rate * k * machines;
    return {
      query: `Each machine in a workshop makes ${rate} ${thing} per hour. With ${machines} machines running, how many hours does it take to make ${total} ${thing}?`,
      steps: `Together the machines make ${machines} x ${rate} = ${machines * rate} ${thing} per hour. So ${total} ${thing} take ${total} / ${machines * rate} = ${k} hours.`,
      answer: String(k),
    };
  },
  ages_sum(r) {
    const [a, b] = r.shuffle([...NAMES]) as string[];
    const young = r.intBetween(3, 40),
      d = r.intBetween(2, 30),
      y = r.intBetween(2, 15);
    const s = 2 * young + d + 2 * y;
    return {
      query: `${a} is ${d} years older than ${b}. In ${y} years the sum of their ages will be ${s}. How old is ${b} now?`,
      steps: `Let ${b} be x years old, so ${a} is x + ${d}. In ${y} years: (x + ${y}) + (x + ${d} + ${y}) = ${s}, so 2x + ${d + 2 * y} = ${s}, 2x = ${s - d - 2 * y} and x = ${young}.`,
      answer: String(young),
    };
  },
  ages_multiple(r) {
    const [a, b] = r.shuffle([...NAMES]) as string[];
    const young = r.intBetween(2, 20),
      k = r.intBetween(2, 5);
    const s = young * (k + 1);
    return {
      query: `${a} is ${k} times as old as ${b}. Together they are ${s} years old. How old is ${a}?`,
      steps: `If ${b} is x years old, ${a} is ${k}x and x + ${k}x = ${k + 1}x = ${s}, so x = ${young}. ${a} is ${k} x ${young} = ${k * young}.`,
      answer: String(k * young),
    };
  },
  fraction_left(r) {
    const name = r.choice(NAMES);
    const d1 = r.intBetween(2, 8),
      d2 = r.intBetween(2, 8);
    const n1 = r.intBetween(1, d1 - 1),
      n2 = r.intBetween(1, d2 - 1);
    const den = d1 * d2,
      eaten = n1 * d2 + n2 * d1;
    if (eaten >= den) return undefined;
    return {
      query: `${name} bakes a pie. ${name} eats ${frac(n1, d1)} of it and a friend eats ${frac(n2, d2)} of it. What fraction of the pie is left?`,
      steps: `Together they eat ${frac(n1, d1)} + ${frac(n2, d2)} = ${frac(eaten, den)} of the pie. The rest is 1 - ${frac(eaten, den)} = ${frac(den - eaten, den)}.`,
      answer: frac(den - eaten, den),
    };
  },
  fraction_fill(r) {
    const q = r.intBetween(2, 8),
      p = r.intBetween(1, q - 1);
    const cap = q * r.intBetween(3, 40);
    const container = r.choice(['tank', 'barrel', 'pool', 'bathtub']);
    return {
      query: `A ${container} holds ${cap} liters and is ${frac(p, q)} full. How many more liters are needed to fill it?`,
      steps: `It holds ${frac(p, q)} x ${cap} = ${(cap * p) / q} liters now, so ${cap} - ${(cap * p) / q} = ${cap - (cap * p) / q} liters are missing.`,
      answer: String(cap - (cap * p) / q),
    };
  },
  percent_of(r) {
    const pct = r.choice([5, 10, 12, 15, 20, 25, 30, 35, 40, 45, 60, 75, 80]);
    const n = r.intBetween(2, 30) * 20;
    const sport = r.choice(['soccer', 'chess', 'the violin', 'basketball', 'in the choir']);
    const verb = sport.startsWith('in') ? 'sing' : 'play';
    const yes = (n * pct) / 100;
    return {
      query: `${pct}% of the ${n} students at a school ${verb} ${sport}. How many students do not ${verb} ${sport}?`,
      steps: `${pct}% of ${n} is ${n} x ${pct} / 100 = ${yes}. So ${n} - ${yes} = ${n - yes} students do not.`,
      answer: String(n - yes),
    };
  },
  percent_change(r) {
    const old = r.intBetween(2, 40) * 5;
    const pct = r.choice([10, 20, 25, 40, 50, 60, 80, 100]);
    const up = r.random() < 0.6;
    const now = up ? old * (1 + pct / 100) : old * (1 - pct / 100);
    if (now <= 0) return undefined;
    const [one] = r.choice(ITEMS);
    return {
      query: `The price of a ${one} went from ${money(old)} to ${money(now)}. By what percent did the price ${up ? 'increase' : 'decrease'}?`,
      steps: `The change is ${money(Math.abs(now - old))}, and ${num(Math.abs(now - old))} / ${old} = ${num(pct / 100)}, which is ${pct}%.`,
      answer: String(pct),
    };
  },
  cookie_boxes(r) {
    const name = r.choice(NAMES);
    const b = r.intBetween(2, 8),
      c = r.intBetween(6, 36),
      k = r.choice([4, 6, 8, 10, 12]);
    const made = b * c;
    const boxes = r.intBetween(1, Math.floor(made / k));
    const sold = made - boxes * k;
    return {
      query: `${name} bakes ${b} batches of ${c} cookies. ${name} sells ${sold} cookies at a market and packs the rest into boxes of ${k}. How many boxes does ${name} fill?`,
      steps: `${name} bakes ${b} x ${c} = ${made} cookies. After selling ${sold}, ${made - sold} are left, which fill ${made - sold} / ${k} = ${boxes} boxes.`,
      answer: String(boxes),
    };
  },
  average_needed(r) {
    const name = r.choice(NAMES);
    const scores = [0, 0, 0, 0].map(() => r.intBetween(60, 100));
    const avg = r.intBetween(70, 95);
    const need = avg * 5 - scores.reduce((s, x) => s + x, 0);
    if (need < 0 || need > 100) return undefined;
    return {
      query: `${name} scored ${scores.slice(0, 3).join(', ')} and ${scores[3]} on four tests. What score on the fifth test would make ${name}'s average exactly ${avg}?`,
      steps: `An average of ${avg} over five tests needs a total of 5 x ${avg} = ${avg * 5}. The first four add up to ${scores.reduce((s, x) => s + x, 0)}, so the fifth must be ${avg * 5} - ${scores.reduce((s, x) => s + x, 0)} = ${need}.`,
      answer: String(need),
    };
  },
  ratio_share(r) {
    const [a, b] = r.shuffle([...NAMES]) as string[];
    const x = r.intBetween(1, 7),
      y = r.intBetween(1, 7);
    if (x === y) return undefined;
    const unit = r.intBetween(2, 60) * 5;
    const total = unit * (x + y);
    return {
      query: `${a} and ${b} share $${grouped(total)} in the ratio ${x}:${y}. How many dollars does ${b} get?`,
      steps: `There are ${x} + ${y} = ${x + y} parts, each worth $${grouped(total)} / ${x + y} = $${unit}. ${b} gets ${y} x $${unit} = $${grouped(y * unit)}.`,
      answer: String(y * unit),
    };
  },
  simple_interest(r) {
    const p = r.intBetween(2, 50) * 100,
      rate = r.intBetween(1, 9),
      t = r.intBetween(1, 6);
    const interest = (p * rate * t) / 100;
    return {
      query: `${r.choice(NAMES)} deposits $${grouped(p)} in an account paying ${rate}% simple interest per year. How many dollars are in the account after ${t} year${t > 1 ? 's' : ''}?`,
      steps: `Each year earns ${rate}% of $${grouped(p)} = ${money((p * rate) / 100)}. Over ${t} year${t > 1 ? 's' : ''}: ${money(interest)}. The balance is $${grouped(p)} + ${money(interest)} = ${money(p + interest)}.`,
      answer: num(p + interest),
    };
  },
  wages(r) {
    const name = r.choice(NAMES);
    const w = r.intBetween(24, 80) / 2,
      h = r.intBetween(3, 9),
      d = r.intBetween(2, 6);
    const earned = w * h * d;
    const spent = r.intBetween(1, Math.floor(earned / 10)) * 5;
    return {
      query: `${name} earns ${money(w)} per hour and works ${h} hours a day for ${d} days, then spends $${spent} on groceries. How many dollars does ${name} have left from the pay?`,
      steps: `${name} works ${h} x ${d} = ${h * d} hours and earns ${h * d} x ${money(w)} = ${money(earned)}. After spending $${spent}: ${money(earned)} - $${spent} = ${money(earned - spent)}.`,
      answer: num(earned - spent),
    };
  },
  production(r) {
    const perDay = r.intBetween(12, 400) * 25,
      days = r.intBetween(3, 30),
      thing = r.choice(THINGS);
    const weeksOff = r.intBetween(0, Math.floor(days / 7));
    const worked = days - weeksOff;
    return {
      query: `A factory makes ${grouped(perDay)} ${thing} a day. Over ${days} days it is closed on ${weeksOff} of them. How many ${thing} does it make in those ${days} days?`,
      steps: `It works ${days} - ${weeksOff} = ${worked} days, making ${worked} x ${grouped(perDay)} = ${grouped(worked * perDay)} ${thing}.`,
      answer: String(worked * perDay),
    };
  },
  vans_needed(r) {
    const people = r.intBetween(20, 300),
      seats = r.intBetween(6, 15);
    const vans = Math.ceil(people / seats);
    if (people % seats === 0) return undefined;
    return {
      query: `${people} people are going on a trip, and each van seats ${seats}. What is the fewest number of vans needed?`,
      steps: `${people} / ${seats} = ${Math.floor(people / seats)} remainder ${people % seats}. The ${people % seats === 1 ? '1 person' : `${people % seats} people`} left over need one more van, so ${vans} vans.`,
      answer: String(vans),
    };
  },
  unit_price(r) {
    const name = r.choice(NAMES);
    const kg = r.intBetween(2, 9) / 2,
      perKg = r.intBetween(4, 24) / 4;
    const fruit = r.choice(['apples', 'grapes', 'cherries', 'potatoes', 'carrots', 'pears']);
    return {
      query: `${fruit[0]!.toUpperCase()}${fruit.slice(1)} cost ${money(perKg)} per kilogram. ${name} buys ${num(kg)} kilograms. How much does ${name} pay, in dollars?`,
      steps: `${num(kg)} x ${money(perKg)} = ${money(kg * perKg)}.`,
      answer: num(kg * perKg),
    };
  },
};

/** `count` distinct records from a seeded stream, templates drawn uniformly. */
export function generate(seed: number, count: number): MathRecord[] {
  const r = new Rng(seed);
  const names = Object.keys(TEMPLATES);
  const seen = new Set<string>();
  const out: MathRecord[] = [];
  while (out.length < count) {
    const type = r.choice(names);
    const p = TEMPLATES[type]!(r);
    if (p === undefined || seen.has(p.query)) continue;
    seen.add(p.query);
    out.push({ query: p.query, response: `${p.steps} The answer is: ${p.answer}`, type });
  }
  return out;
}

/** The shipped split sizes and seed. */
export const SHIPPED = { seed: 2026, train: 520, val: 80 };

/** The JSONL text of the shipped splits. */
export function shippedFiles(): { train: string; val: string } {
  const all = generate(SHIPPED.seed, SHIPPED.train + SHIPPED.val);
  const jsonl = (rs: MathRecord[]): string => rs.map((x) => JSON.stringify(x)).join('\n') + '\n';
  return { train: jsonl(all.slice(0, SHIPPED.train)), val: jsonl(all.slice(SHIPPED.train)) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'data', 'metamathqa');
  mkdirSync(dir, { recursive: true });
  const files = shippedFiles();
  for (const [split, text] of Object.entries(files)) {
    writeFileSync(join(dir, `${split}.jsonl`), text);
    console.log(`wrote ${join(dir, `${split}.jsonl`)}: ${text.split('\n').length - 1} records, ${text.length} bytes`);
  }
}
