// Named model shapes (`ragen model init --shape`): read from python/ragen_torch/shapes.json, the one table that
// the Python side (`ragen bench gpu`'s random checkpoints) reads too, so a shape is declared once.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, didYouMean } from '../util/index.js';

/**
 * The model family of a shape: it picks the tokenizer (Qwen2.5's or Qwen3's added tokens) and the chat template;
 * `qwen2.5-vl` (Qwen2.5-VL) uses Qwen2.5's and `qwen3-vl` Qwen3's, whose vocabularies hold the vision tokens.
 */
export type ShapeFamily = 'qwen2.5' | 'qwen3' | 'qwen2.5-vl' | 'qwen3-vl';

/** One named shape: its family and the exact Hugging Face config.json it is written with (torch_dtype aside). */
export interface ModelShape {
  name: string;
  family: ShapeFamily;
  config: Record<string, unknown>;
}

interface ShapeTable {
  families: Record<string, Record<string, unknown>>;
  shapes: Record<string, { family: string } & Record<string, unknown>>;
  aliases: Record<string, string>;
}

/**
 * The path of shapes.json: python/ragen_torch beside src/ (or dist/src/) in the repository or the installed package.
 */
export function shapeTablePath(): string {
  let dir = import.meta.dirname;
  for (let i = 0; i < 5; i++) {
    const p = join(dir, 'python', 'ragen_torch', 'shapes.json');
    if (existsSync(p)) return p;
    dir = dirname(dir);
  }
  throw new ConfigError(
    `python/ragen_torch/shapes.json was not found above ${import.meta.dirname}; reinstall ragen-ts (the package ships python/).`,
  );
}

let table: ShapeTable | undefined;
function readTable(): ShapeTable {
  table ??= JSON.parse(readFileSync(shapeTablePath(), 'utf8')) as ShapeTable;
  return table;
}

/** Every shape name `modelShape` accepts, aliases last. */
export function shapeNames(): string[] {
  const t = readTable();
  return [...Object.keys(t.shapes), ...Object.keys(t.aliases)];
}

const FAMILIES: readonly string[] = ['qwen2.5', 'qwen3', 'qwen2.5-vl', 'qwen3-vl'] satisfies ShapeFamily[];
const isFamily = (f: string): f is ShapeFamily => FAMILIES.includes(f);

/** The shape called `name` (or an alias of one); a ConfigError naming the known ones when there is none. */
export function modelShape(name: string): ModelShape {
  const t = readTable();
  const key = t.aliases[name] ?? name;
  const entry = t.shapes[key];
  if (!entry)
    throw new ConfigError(
      `Unknown model shape \`${name}\`: give one of ${shapeNames().join(', ')}.${didYouMean(name, shapeNames())}`,
    );
  const { family, ...own } = entry;
  const base = t.families[family];
  if (!base || !isFamily(family))
    throw new ConfigError(
      `${shapeTablePath()}: shape \`${key}\` names family \`${family}\`, which the table does not define.`,
    );
  return { name: key, family, config: { ...base, ...own } };
}
