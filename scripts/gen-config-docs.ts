// Generates docs/config.md from the config schema: every key with its type, default and meaning (the JSDoc
// in src/config/schema*.ts and in the sections other modules own), the shorthands, and the RAGEN key map.
// Run: npx tsx scripts/gen-config-docs.ts
import '../src/envs/index.js'; // the built-in environments
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import * as agent from '../src/agent/config.js';
import * as algo from '../src/config/schema-algo.js';
import * as trainer from '../src/config/schema-trainer.js';
import * as main from '../src/config/schema.js';
import { CONFIG_ALIASES } from '../src/config/aliases.js';
import { RAGEN_KEYS } from '../src/config/ragen-keys.js';
import { describeType, kindOf, unwrap } from '../src/config/schema-walk.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// The files whose exported `*Schema` consts make up the config, and their modules (same order).
const SCHEMA_FILES = [
  'src/config/schema.ts',
  'src/config/schema-algo.ts',
  'src/config/schema-trainer.ts',
  'src/agent/config.ts',
].map((f) => join(ROOT, f));
const SCHEMA_MODULES: Record<string, unknown>[] = [main, algo, trainer, agent];
export const DOCS_FILE = join(ROOT, 'docs/config.md');

interface Doc {
  text: string;
  default?: string;
}

/**
 * JSDoc of every `const X = z.strictObject({...})` (under `X`, refinements chained after it allowed) and of its
 * properties (under `X.prop`).
 */
function readJsDoc(): Map<string, Doc> {
  const docs = new Map<string, Doc>();
  for (const file of SCHEMA_FILES) {
    const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const comment = (node: ts.Node): Doc | undefined => {
      const ranges = ts.getLeadingCommentRanges(src.text, node.getFullStart()) ?? [];
      const last = ranges.filter((r) => src.text.slice(r.pos, r.pos + 3) === '/**').pop();
      if (!last) return undefined;
      const body = src.text
        .slice(last.pos + 3, last.end - 2)
        .split('\n')
        .map((l) => l.replace(/^\s*\*\s?/, '').trim())
        .join(' ')
        .trim();
      const m = body.match(/^(.*?)\s*@default\s+(.*)$/);
      return m ? { text: m[1]!.trim(), default: m[2]!.trim() } : { text: body };
    };
    src.forEachChild((stmt) => {
      if (!ts.isVariableStatement(stmt)) return;
      for (const decl of stmt.declarationList.declarations) {
        const name = decl.name.getText(src);
        const own = comment(stmt);
        if (own) docs.set(name, own);
        let call = decl.initializer;
        // `z.strictObject({...}).superRefine(...)`: walk down the chain to the object call.
        while (
          call &&
          ts.isCallExpression(call) &&
          ts.isPropertyAccessExpression(call.expression) &&
          ts.isCallExpression(call.expression.expression)
        )
          call = call.expression.expression;
        if (!call || !ts.isCallExpression(call) || !/^z\s*\.\s*(strict)?[oO]bject$/.test(call.expression.getText(src)))
          continue;
        const arg = call.arguments[0];
        if (!arg || !ts.isObjectLiteralExpression(arg)) continue;
        for (const prop of arg.properties) {
          const doc = comment(prop);
          if (doc && prop.name) docs.set(`${name}.${prop.name.getText(src)}`, doc);
        }
      }
    });
  }
  return docs;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|');
// `optional`: the field may be left out (an alternative to another key, e.g. `tag` or `agent` of an env entry).
const show = (v: unknown, optional = false): string =>
  v === undefined ? (optional ? '(unset)' : '(required)') : `\`${JSON.stringify(v)}\``;

/** The whole of docs/config.md. Throws if a field lacks JSDoc or its `@default` disagrees with the schema. */
export function renderConfigDocs(): string {
  const docs = readJsDoc();
  const names = new Map<unknown, string>();
  for (const mod of SCHEMA_MODULES) for (const [k, v] of Object.entries(mod)) if (/Schema$/.test(k)) names.set(v, k);
  const problems: string[] = [];
  const sections: string[] = [];
  // A leaf's default is what it parses `undefined` to (fields without a default are required).
  const defaultOf = (s: z.ZodType): unknown => {
    const r = s.safeParse(undefined);
    return r.success ? r.data : undefined;
  };

  const walk = (schema: z.ZodType, key: string, title: string): void => {
    const obj = unwrap(schema) as z.ZodObject;
    const name = names.get(obj);
    if (!name) throw new Error(`schema at \`${key || '(root)'}\` is not an exported *Schema const`);
    const rows: string[] = [];
    const children: [z.ZodType, string, string][] = [];
    for (const [prop, child] of Object.entries(obj.shape) as [string, z.ZodType][]) {
      const full = key ? `${key}.${prop}` : prop;
      if (kindOf(child) === 'object') {
        children.push([child, full, docs.get(names.get(unwrap(child)) ?? '')?.text ?? '']);
        continue;
      }
      const v = defaultOf(child);
      const doc = docs.get(`${name}.${prop}`);
      if (!doc) {
        problems.push(`\`${full}\` (${name}.${prop}) has no JSDoc`);
        continue;
      }
      if (v !== undefined) {
        if (doc.default === undefined) problems.push(`\`${full}\`: JSDoc lacks \`@default ${JSON.stringify(v)}\``);
        else if (JSON.stringify(child.parse(parseYaml(doc.default))) !== JSON.stringify(v)) {
          problems.push(
            `\`${full}\`: JSDoc says @default ${doc.default}, the schema's default is ${JSON.stringify(v)}`,
          );
        }
      }
      rows.push(
        `| \`${full}\` | ${cell(describeType(child))} | ${cell(show(v, child.safeParse(undefined).success))} | ${cell(doc.text)} |`,
      );
      const el = (unwrap(child) as any).def?.element as z.ZodType | undefined;
      if (kindOf(child) === 'array' && el && kindOf(el) === 'object')
        children.push([el, `${full}.N`, docs.get(names.get(unwrap(el)) ?? '')?.text ?? '']);
      const value = (unwrap(child) as any).def?.valueType as z.ZodType | undefined;
      if (kindOf(child) === 'record' && value && kindOf(value) === 'object')
        children.push([value, `${full}.<tag>`, docs.get(names.get(unwrap(value)) ?? '')?.text ?? '']);
    }
    if (rows.length)
      sections.push(
        `## ${key ? `\`${key}\`` : 'Top level'}\n\n${title}\n\n| key | type | default | meaning |\n|---|---|---|---|\n${rows.join('\n')}\n`,
      );
    for (const [child, full, t] of children) walk(child, full, t);
  };
  walk(main.ConfigSchema, '', docs.get('ConfigSchema')?.text ?? '');
  if (problems.length) throw new Error(`config schema docs are incomplete:\n${problems.join('\n')}`);

  const aliases = CONFIG_ALIASES.map((a) => `| \`${a.key}: x\` | ${cell(a.doc)} |`).join('\n');
  const ragen = RAGEN_KEYS.map(
    (k) => `| \`${cell(k.ragen)}\` | ${k.ours ? `\`${k.ours}\`` : '—'} | ${cell(k.note ?? '')} |`,
  ).join('\n');
  return `# Configuration reference

<!-- Generated by \`npx tsx scripts/gen-config-docs.ts\` from the JSDoc in src/config/schema*.ts and src/agent/config.ts. Do not edit by hand: a test fails when this file is out of date. -->

A run's config is resolved in this order, later winning:

1. the typed defaults below (RAGEN's \`config/base.yaml\` values where RAGEN has the key, unless a field says otherwise);
2. preset files (\`--config sokoban-ppo\`, \`--config configs/my.yaml\`; several merge in order; a file may \`extends: base.yaml\` or a list of files);
3. \`dotted.key=value\` overrides on the command line, Hydra-style. Values are YAML: \`trainer.actorLr=1e-5\`,
   \`agent.enableThink=false\`, \`agent.maxContextWindow=null\`, \`model.lora.targetModules=[q_proj,v_proj]\`,
   \`env.train=[{tag: Bandit, groups: 8}]\`. List items are addressed by index (\`env.train.0.groups=4\`; the next index appends).

A flag and an override: a flag that is shorthand for a key (\`ragen train --steps\` for \`trainer.steps\`; \`ragen bench learning
--steps\`) and an override of the same key must agree: \`--steps 1 trainer.steps=abc\` or \`--steps 1 trainer.steps=2\` is refused
with a sentence naming both (and, for a bad value, why it is bad), and \`--steps 2 trainer.steps=2\` is accepted. Neither wins by
its place on the line. Keys a command sets per run are its flags' alone: \`logging.runDir\` under \`--runs-dir\` (\`ragen bench
learning\`, \`ragen bench ragen2\`) and \`seed.train\` under \`--seeds\` (\`ragen bench ragen2\`). \`ragen eval --max-turns\`
and \`--set maxTurns=\` follow the same rule.

Everything is validated at load: an unknown key or a bad value is an error naming the full key, the value, where it came from,
the reason and the nearest valid key. Things only the run can check (the model directory exists, env tags are registered,
\`env.config.<tag>\` fits the env's own schema) are checked when the run starts. The resolved config is written to
\`config.yaml\` in the run directory and in every checkpoint; \`ragen train --config runs/<run>/config.yaml\` repeats a run.

Presets (\`configs/\`): one per environment (\`sokoban-ppo\` is the default, \`frozenlake-ppo\`, \`bandit-ppo\`, \`countdown-ppo\`,
\`metamathqa-ppo\`, \`sudoku-ppo\`, \`2048-ppo\`, \`rubikscube-ppo\`), sized for tiny models on a CPU through \`base.yaml\`, plus
\`sokoban-grpo\` (\`sokoban-ppo\` filters with top-p 0.9 and \`sokoban-grpo\` inherits it; \`frozenlake-ppo\` adds a k3 KL loss, β 0.05:
docs/benchmarks.md says why); \`sokoban-distill\` (on-policy distillation of a PPO-trained ragen-tiny checkpoint into ragen-tiny, \`algo.distill\`: make the teacher first, the file says how);
\`webshop-ppo\` and \`searchqa-ppo\` (RAGEN's \`_6_webshop\` / \`_9_search\` settings over the schema defaults, sized for Qwen2.5-3B-Instruct
on the torch engine; their env keys, e.g. \`env.config.SearchQA.retrievalUrl\`, are in docs/environments.md);
\`deepcoder-grpo\` (DeepCoder, needs bubblewrap) and \`lean-ppo\` (Lean, needs a Kimina Lean server), sized for pretrained models of
>= 1.5B parameters on a GPU engine (each file names the model to download; env keys such as \`env.config.DeepCoder.sandbox\` and
\`env.config.Lean.serverUrl\` are in docs/environments.md);
algorithm switches \`algo/{ppo,grpo,drgrpo,rloo,reinforce-pp,bilevel-gae}\` and filter switches
\`filter/{none,top-p-0.9,top-p-0.9-linear,top-k-0.25}\` to stack on them: \`--config frozenlake-ppo --config algo/grpo\`.

${sections.join('\n')}
## Shorthands

Accepted in presets and overrides, expanded before validation (saved configs hold the expanded keys):

| shorthand | means |
|---|---|
${aliases}

## RAGEN keys

RAGEN's config keys (its \`config/base.yaml\` and the verl keys it sets) and ours. Typing a RAGEN key in a preset or an
override gives an error that names our key. \`…\` marks keys whose enclosing section varies in RAGEN's files.

| RAGEN | ragen-ts | note |
|---|---|---|
${ragen}
`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(DOCS_FILE, renderConfigDocs());
  console.log(`wrote ${DOCS_FILE}`);
}
