// Reading the shape of a zod schema: child lookup by key, the list of valid dotted keys, a type summary.
// Used to name unknown keys (with did-you-mean) and to generate docs/config.md from the config schema.
import type { z } from 'zod';

type Any = z.ZodType;
// zod 4 keeps every schema's parameters on `.def`; we read only the stable fields (type, innerType, shape...).
type Def = { type: string; [k: string]: any };
const def = (s: Any): Def => (s as any).def as Def;

/** Strip default/prefault/optional/nullable/readonly wrappers. */
export function unwrap(schema: Any): Any {
  let s = schema;
  for (;;) {
    const d = def(s);
    if (['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch', 'nonoptional'].includes(d.type))
      s = d.innerType as Any;
    else if (d.type === 'pipe') s = d.in as Any;
    else return s;
  }
}

/** True when `null` is an accepted value. */
export function isNullable(schema: Any): boolean {
  let s = schema;
  for (;;) {
    const d = def(s);
    if (d.type === 'nullable') return true;
    if (['default', 'prefault', 'optional', 'readonly', 'catch'].includes(d.type)) s = d.innerType as Any;
    else return false;
  }
}

export type NodeKind = 'object' | 'array' | 'record' | 'tuple' | 'leaf';

/** What kind of container (if any) a schema is, after unwrapping. */
export function kindOf(schema: Any): NodeKind {
  const t = def(unwrap(schema)).type;
  return t === 'object' || t === 'array' || t === 'record' || t === 'tuple' ? t : 'leaf';
}

/** The keys of an object schema. */
export function objectKeys(schema: Any): string[] {
  const d = def(unwrap(schema));
  return d.type === 'object' ? Object.keys(d.shape as object) : [];
}

/**
 * The schema of `segment` inside `schema`: an object's field, an array's element (numeric segment),
 * a record's value (any segment), a tuple's item. Undefined when there is no such child.
 */
export function childSchema(schema: Any, segment: string): Any | undefined {
  const d = def(unwrap(schema));
  switch (d.type) {
    case 'object':
      return Object.hasOwn(d.shape, segment) ? (d.shape[segment] as Any) : undefined;
    case 'array':
      return /^\d+$/.test(segment) ? (d.element as Any) : undefined;
    case 'record':
      return d.valueType as Any;
    case 'tuple':
      return /^\d+$/.test(segment) ? (d.items[Number(segment)] as Any | undefined) : undefined;
    default:
      return undefined;
  }
}

/** Options of an enum schema (after unwrapping), else undefined. */
export function enumOptions(schema: Any): string[] | undefined {
  const d = def(unwrap(schema));
  return d.type === 'enum' ? Object.values(d.entries as Record<string, string>) : undefined;
}

/**
 * Every dotted key reachable through objects (arrays of objects as `key.N.field`, shown with `N`).
 * Records and leaves end a key. Includes section keys (`algo`, `algo.filter`) as well as leaves.
 */
export function allKeys(schema: Any, prefix = ''): string[] {
  const out: string[] = [];
  const s = unwrap(schema);
  const d = def(s);
  if (d.type === 'object') {
    for (const k of Object.keys(d.shape)) {
      const key = prefix ? `${prefix}.${k}` : k;
      out.push(key, ...allKeys(d.shape[k] as Any, key));
    }
  } else if (d.type === 'array' && kindOf(d.element as Any) === 'object') {
    out.push(...allKeys(d.element as Any, `${prefix}.N`));
  }
  return out;
}

/** A short human summary of a leaf's type and range: `integer >= 1`, `'a' | 'b'`, `string[]`, `number | null`. */
export function describeType(schema: Any): string {
  const base = describeInner(unwrap(schema));
  return isNullable(schema) ? `${base} | null` : base;
}

function describeInner(s: Any): string {
  const d = def(s);
  switch (d.type) {
    case 'enum':
      return Object.values(d.entries as Record<string, string>)
        .map((v) => `\`${v}\``)
        .join(' | ');
    case 'number':
      return numberRange(s);
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'array':
      return kindOf(d.element as Any) === 'object' ? 'list of objects' : `${describeInner(unwrap(d.element as Any))}[]`;
    case 'tuple':
      return `[${(d.items as Any[]).map((i) => describeInner(unwrap(i))).join(', ')}]`;
    case 'record':
      return 'map';
    case 'object':
      return 'object';
    default:
      return d.type;
  }
}

function numberRange(s: Any): string {
  const checks = (
    (def(s).checks ?? []) as {
      _zod: { def: { check: string; value?: number; inclusive?: boolean; format?: string } };
    }[]
  ).map((c) => c._zod.def);
  const int = checks.some((c) => c.check === 'number_format' && /int/.test(c.format ?? '')) ? 'integer' : 'number';
  const parts: string[] = [];
  for (const c of checks) {
    if (c.check === 'greater_than') parts.push(`${c.inclusive ? '>=' : '>'} ${c.value}`);
    if (c.check === 'less_than') parts.push(`${c.inclusive ? '<=' : '<'} ${c.value}`);
  }
  return parts.length ? `${int} ${parts.join(', ')}` : int;
}
