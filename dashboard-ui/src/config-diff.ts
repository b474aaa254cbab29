// The config keys on which the selected runs differ: each run's config.yaml flattened to dotted keys (lists whole, as
// YAML flow text), then the keys whose values are not all the same, or that some run lacks.

/** `{a: {b: 1}, c: [1, 2]}` -> `{'a.b': '1', c: '[1,2]'}`. */
export function flattenConfig(value: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flattenConfig(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) out[prefix] = typeof value === 'string' ? value : JSON.stringify(value);
  return out;
}

export interface ConfigDiff {
  /** Keys that differ, sorted, with one value per run (undefined: the run has no such key or no config). */
  rows: { key: string; values: (string | undefined)[] }[];
  /** Keys every run has with the same value. */
  same: number;
}

/** The differing keys of `configs`; a run without a config (null) is shown but compared on nothing. */
export function configDiff(configs: readonly (Record<string, unknown> | null)[]): ConfigDiff {
  const flat = configs.map((c) => (c ? flattenConfig(c) : null));
  const keys = [...new Set(flat.flatMap((f) => (f ? Object.keys(f) : [])))].sort();
  const rows: ConfigDiff['rows'] = [];
  let same = 0;
  for (const key of keys) {
    const compared = flat.flatMap((f) => (f ? [f[key]] : []));
    if (compared.every((v) => v === compared[0])) same++;
    else rows.push({ key, values: flat.map((f) => f?.[key]) });
  }
  return { rows, same };
}
