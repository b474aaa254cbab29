// The tools an MCP server lists, checked before the model sees them: unique names, and input schemas that compile
// without recursing forever (a `$ref` cycle that never moves into the data is refused by name, not a stack overflow).
import type { JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { McpTool } from './connection.js';

/** Keywords whose subschemas apply to the same instance as their parent (a `$ref` loop through them never ends). */
const SAME_INSTANCE_ONE = ['not', 'if', 'then', 'else'] as const;
const SAME_INSTANCE_MANY = ['allOf', 'anyOf', 'oneOf'] as const;

/** Deeper schemas are refused: no tool needs them, and walking them could overflow the stack. */
export const MAX_SCHEMA_DEPTH = 64;

/** The subschema at a local JSON pointer (`#`, `#/definitions/x`), or undefined where it does not resolve. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * The first chain of `$ref`s that comes back to where it started without moving into the instance (e.g. `{"$ref":
 * "#"}`,
 * or `properties.a = {"$ref": "#/properties/a"}`), as the list of pointers; null where there is none. Recursion through
 * `properties`/`items` (a tree of nodes) moves into the data and ends, so it is allowed.
 */
export function refCycle(schema: unknown): string[] | null {
  const done = new Set<string>(); // pointers whose same-instance chains are known to end
  const walk = (node: unknown, at: string, path: string[]): string[] | null => {
    if (done.has(at) || typeof node !== 'object' || node === null || Array.isArray(node)) return null;
    const n = node as Record<string, unknown>;
    const next: [unknown, string][] = [];
    if (typeof n['$ref'] === 'string') next.push([resolvePointer(schema, n['$ref']), n['$ref']]);
    for (const k of SAME_INSTANCE_ONE) if (n[k] !== undefined) next.push([n[k], `${at}/${k}`]);
    for (const k of SAME_INSTANCE_MANY) {
      const list = n[k];
      if (Array.isArray(list)) list.forEach((s, i) => next.push([s, `${at}/${k}/${i}`]));
    }
    for (const [child, where] of next) {
      if (path.includes(where)) return [...path.slice(path.indexOf(where)), where];
      const found = walk(child, where, [...path, where]);
      if (found) return found;
    }
    done.add(at);
    return null;
  };
  // every subschema may start a chain: walk each object node of the document
  const starts: [unknown, string][] = [];
  const collect = (node: unknown, at: string, depth: number): void => {
    if (typeof node !== 'object' || node === null) return;
    if (depth > MAX_SCHEMA_DEPTH)
      throw new RangeError(`nested deeper than ${MAX_SCHEMA_DEPTH} levels at ${at.slice(0, 80)}...`);
    if (!Array.isArray(node)) starts.push([node, at]);
    for (const [k, v] of Object.entries(node))
      collect(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, depth + 1);
  };
  collect(schema, '#', 0);
  for (const [node, at] of starts) {
    const found = walk(node, at, [at]);
    if (found) return found;
  }
  return null;
}

/** Why a server's tool list cannot be used (one sentence), or null when the tools can be shown and checked. */
export function toolListProblem(tools: McpTool[]): string | null {
  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.name))
      return `it lists two tools named \`${t.name}\` (the model could not tell them apart, and only one schema would check the calls); give each tool its own name`;
    seen.add(t.name);
  }
  for (const t of tools) {
    let cycle: string[] | null;
    try {
      cycle = refCycle(t.inputSchema);
    } catch (err) {
      return `the input schema of tool \`${t.name}\` is ${(err as Error).message}; flatten the schema`;
    }
    if (cycle)
      return `the input schema of tool \`${t.name}\` has a \`$ref\` cycle that never reaches the data (${cycle.join(' -> ')}), so no call could be checked against it; fix the schema`;
  }
  return null;
}

/** One validator per tool; a schema the validator cannot compile is a sentence naming the tool, not a raw error. */
export function compileToolValidators(
  tools: McpTool[],
  getValidator: (schema: Record<string, unknown>) => JsonSchemaValidator<unknown>,
): Map<string, JsonSchemaValidator<unknown>> | string {
  const validators = new Map<string, JsonSchemaValidator<unknown>>();
  for (const t of tools) {
    try {
      validators.set(t.name, getValidator(t.inputSchema));
    } catch (err) {
      return `the input schema of tool \`${t.name}\` does not compile (${(err as Error).message}); fix the schema`;
    }
  }
  return validators;
}
