// Shorthand keys accepted in presets and overrides and expanded to canonical keys before validation
// (`algo.filter.topP=0.9` = `algo.filter.strategy=top_p algo.filter.value=0.9`). Saved configs hold only canonical
// keys.
import { ConfigError } from '../util/index.js';
import { isPlainObject } from './overrides.js';

/** One shorthand: its dotted key, what it expands to, and a line for the docs. */
export interface ConfigAlias {
  key: string;
  expand(value: unknown): Record<string, unknown>;
  doc: string;
}

const filterAlias = (name: string, strategy: string, meaning: string): ConfigAlias => ({
  key: `algo.filter.${name}`,
  expand: (value) => ({ 'algo.filter.strategy': strategy, 'algo.filter.value': value }),
  doc: `\`algo.filter.strategy: ${strategy}\` with \`algo.filter.value\` = the given ${meaning}`,
});

/** Every shorthand key. */
export const CONFIG_ALIASES: readonly ConfigAlias[] = [
  filterAlias('topP', 'top_p', 'p (1 = no filter)'),
  filterAlias('topK', 'top_k', 'fraction of groups'),
  filterAlias('topKAbs', 'top_k_abs', 'number of groups'),
  filterAlias('minP', 'min_p', 'ratio to the best group'),
];

/** The alias with this dotted key, if any. */
export function findAlias(key: string): ConfigAlias | undefined {
  return CONFIG_ALIASES.find((a) => a.key === key);
}

/**
 * Replace shorthand keys in one layer of plain config data by their expansion (a new object; the input is
 * not changed). Setting a shorthand and one of the keys it expands to in the same layer is an error.
 */
export function expandAliases(data: Record<string, unknown>, source: string): Record<string, unknown> {
  let out = data;
  for (const alias of CONFIG_ALIASES) {
    const path = alias.key.split('.');
    const parentPath = path.slice(0, -1);
    const leaf = path[path.length - 1]!;
    let parent: unknown = out;
    for (const seg of parentPath) parent = isPlainObject(parent) ? parent[seg] : undefined;
    if (!isPlainObject(parent) || !(leaf in parent)) continue;
    const expansion = alias.expand(parent[leaf]);
    out = structuredClone(out);
    let node = out;
    for (const seg of parentPath) node = node[seg] as Record<string, unknown>;
    delete node[leaf];
    for (const [key, value] of Object.entries(expansion)) {
      const field = key.split('.').pop()!;
      if (field in node) {
        throw new ConfigError(
          `Config \`${alias.key}\` (${source}) is shorthand for ${Object.keys(expansion)
            .map((k) => `\`${k}\``)
            .join(' + ')}; set either the shorthand or \`${key}\`, not both.`,
        );
      }
      node[field] = value;
    }
  }
  return out;
}
