// Lean theorems for the env: a small generated miniF2F-style set (elementary algebra and arithmetic with
// short Mathlib proofs), or records loaded from miniF2F-format JSONL (RAGEN reads HF CoderBak/minif2f).
import { readFileSync } from 'node:fs';
import { ConfigError, Rng } from '../../util/index.js';

/** One theorem: what RAGEN's LeanEnv keeps per dataset record. */
export interface LeanTheorem {
  name: string;
  /** `import ...` lines ('' = the env's `defaultImports`). */
  imports: string;
  /** Lines between the imports and the theorem (`open ...`, `set_option ...`). */
  preamble: string;
  /** `theorem name ... := by` (the proof's tactics follow, indented by two spaces). */
  formalStatement: string;
  naturalLanguageStatement: string;
  /** A known proof, one tactic per step (generated theorems only; loaded records have none). */
  proof?: string[];
}

/** RAGEN's default header when a record has no imports. */
export const DEFAULT_IMPORTS =
  'import Mathlib\nimport Aesop\nset_option maxHeartbeats 0\nopen BigOperators Real Nat Topology Rat';

type Template = (rng: Rng, name: string) => Omit<LeanTheorem, 'name' | 'imports' | 'preamble'>;

const TEMPLATES: Template[] = [
  (rng, name) => {
    const a = rng.intBetween(2, 9);
    const r = rng.intBetween(-9, 12);
    const b = rng.intBetween(-20, 20);
    const c = a * r + b;
    return {
      formalStatement: `theorem ${name} (x : ℝ) (h₀ : ${a} * x + ${paren(b)} = ${paren(c)}) : x = ${paren(r)} := by`,
      naturalLanguageStatement: `If ${a}x + ${paren(b)} = ${c} for a real number x, show that x = ${r}.`,
      proof: ['linarith'],
    };
  },
  (rng, name) => {
    const [a, b, c] = [rng.intBetween(10, 99), rng.intBetween(10, 99), rng.intBetween(0, 50)];
    const m = rng.intBetween(3, 13);
    return {
      formalStatement: `theorem ${name} : (${a} * ${b} + ${c}) % ${m} = ${(a * b + c) % m} := by`,
      naturalLanguageStatement: `Find the remainder when ${a} · ${b} + ${c} is divided by ${m}; show that it is ${(a * b + c) % m}.`,
      proof: ['norm_num'],
    };
  },
  (rng, name) => {
    const [x, y] = [rng.intBetween(-15, 15), rng.intBetween(-15, 15)];
    return {
      formalStatement: `theorem ${name} (x y : ℤ) (h₀ : x + y = ${paren(x + y)}) (h₁ : x - y = ${paren(x - y)}) : x = ${paren(x)} := by`,
      naturalLanguageStatement: `Integers x and y satisfy x + y = ${x + y} and x - y = ${x - y}. Show that x = ${x}.`,
      proof: ['omega'],
    };
  },
  (rng, name) => {
    const [x, y] = [rng.intBetween(-12, 12), rng.intBetween(-12, 12)];
    return {
      formalStatement: `theorem ${name} (x y : ℝ) (h₀ : x + y = ${paren(x + y)}) (h₁ : x - y = ${paren(x - y)}) : x = ${paren(x)} ∧ y = ${paren(y)} := by`,
      naturalLanguageStatement: `Real numbers x and y satisfy x + y = ${x + y} and x - y = ${x - y}. Show that x = ${x} and y = ${y}.`,
      proof: ['constructor', 'linarith', 'linarith'],
    };
  },
  (rng, name) => {
    const [p, q] = [rng.intBetween(2, 12), rng.intBetween(2, 12)];
    return {
      formalStatement: `theorem ${name} (a b : ℕ) (h₀ : a = ${p}) (h₁ : b = ${q}) : a * b + a = ${p * q + p} := by`,
      naturalLanguageStatement: `Let a = ${p} and b = ${q}. Show that ab + a = ${p * q + p}.`,
      proof: ['subst h₀', 'subst h₁', 'norm_num'],
    };
  },
  (rng, name) => {
    const a = rng.intBetween(1, 30);
    const c = rng.intBetween(1, 20);
    const b = a + c + rng.intBetween(-c, 0);
    return {
      formalStatement: `theorem ${name} (n : ℕ) (h₀ : ${a} < n) : ${b} < n + ${c} := by`,
      naturalLanguageStatement: `For a natural number n greater than ${a}, show that ${b} < n + ${c}.`,
      proof: ['omega'],
    };
  },
];

const paren = (n: number): string => (n < 0 ? `(${n})` : String(n));

/** The generated set: `count` theorems, theorem k from template k mod T with a seed derived from k. */
export function generateTheorems(count: number): LeanTheorem[] {
  return Array.from({ length: count }, (_, k) => {
    const name = `ragen_gen_${k}`;
    const t = TEMPLATES[k % TEMPLATES.length]!(new Rng((Math.imul(k + 7, 0x85ebca6b) ^ 0x27d4eb2f) >>> 0), name);
    return { name, imports: '', preamble: '', ...t };
  });
}

/** Split a miniF2F `formal_statement` into imports, preamble and the theorem (RAGEN's `_split_formal_sections`). */
export function splitFormalSections(text: string): { imports: string; preamble: string; body: string } {
  const imports: string[] = [];
  const preamble: string[] = [];
  const body: string[] = [];
  let started = false;
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (started) body.push(line);
    else if (s === '') preamble.push(line);
    else if (s.startsWith('import')) imports.push(line);
    else if (/^(theorem|lemma|def|example|instance)\b/.test(s)) {
      started = true;
      body.push(line);
    } else preamble.push(line);
  }
  return { imports: imports.join('\n').trim(), preamble: preamble.join('\n').trim(), body: body.join('\n').trim() };
}

/**
 * Records of miniF2F-format JSONL (`formal_statement`, `natural_language_statement`, `name`); lines without a statement
 * are skipped.
 */
export function loadTheorems(path: string): LeanTheorem[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `Lean dataPath \`${path}\` cannot be read (${(err as Error).message}). Give a JSONL file with formal_statement and natural_language_statement per line, or '' for the generated set.`,
    );
  }
  const out: LeanTheorem[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line);
    } catch {
      throw new ConfigError(
        `Lean dataPath \`${path}\` line ${i + 1} is not JSON: ${JSON.stringify(line.slice(0, 80))}.`,
      );
    }
    if (typeof rec.formal_statement !== 'string' || !rec.formal_statement.trim()) return;
    const parts = splitFormalSections(rec.formal_statement);
    out.push({
      name: String(rec.name ?? rec.id ?? `record_${i}`),
      imports: parts.imports,
      preamble: parts.preamble,
      formalStatement: parts.body,
      naturalLanguageStatement:
        typeof rec.natural_language_statement === 'string' ? rec.natural_language_statement : '',
    });
  });
  if (out.length === 0) throw new ConfigError(`Lean dataPath \`${path}\` has no record with a formal_statement.`);
  return out;
}
