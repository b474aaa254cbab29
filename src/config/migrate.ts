// Saved configs (run directories, checkpoints) written before the config redesign of issue 13 use keys that no longer
// exist. `migrateSavedConfig` rewrites them to today's names, so such a run still resumes and evaluates; keys whose
// value meant "do nothing" are dropped, and any other value of a removed key stays for the schema to reject.
import { ConfigError } from '../util/index.js';

type Data = Record<string, unknown>;

const isObject = (v: unknown): v is Data => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Renamed keys: [section, old key, new key]. */
const RENAMED: [string, string, string][] = [
  ['agent', 'contextMode', 'contextWindowMode'],
  ['agent', 'window', 'maxContextWindow'],
  ['algo', 'dualClipC', 'clipRatioC'],
];

/** Removed `model` keys and the one value each could hold that did anything: that value is dropped with the key. */
const REMOVED_MODEL: Record<string, (v: unknown) => boolean> = {
  dtype: (v) => v === 'float32',
  threads: () => true, // nothing read it
  openai: () => true, // the openai engine could not train, so a saved training config never used it
};

/**
 * Today's form of a saved config's data (a copy) and one line per change. Only saved configs go through this:
 * presets and command-line overrides with old keys get the normal unknown-key error.
 */
export function migrateSavedConfig(data: Data, source: string): { data: Data; changes: string[] } {
  const out = structuredClone(data);
  const changes: string[] = [];
  const section = (name: string): Data | undefined => (isObject(out[name]) ? (out[name] as Data) : undefined);
  const move = (from: Data, key: string, to: Data, newKey: string, label: string, value: unknown = from[key]): void => {
    if (newKey in to)
      throw new ConfigError(`\`${source}\` sets both the old key \`${label}\` and its new name; remove the old one.`);
    to[newKey] = value;
    delete from[key];
  };
  for (const [name, oldKey, newKey] of RENAMED) {
    const s = section(name);
    if (s && oldKey in s) {
      move(s, oldKey, s, newKey, `${name}.${oldKey}`);
      changes.push(`${name}.${oldKey} -> ${name}.${newKey}`);
    }
  }
  const agent = section('agent');
  if (agent && 'rewardMode' in agent) {
    const mode = agent['rewardMode'];
    if (mode !== 'turn' && mode !== 'episode')
      throw new ConfigError(
        `\`${source}\`: old key \`agent.rewardMode\` = ${JSON.stringify(mode)}; it took "episode" or "turn" (today: agent.useTurnScores).`,
      );
    move(agent, 'rewardMode', agent, 'useTurnScores', 'agent.rewardMode', mode === 'turn');
    changes.push(`agent.rewardMode: ${mode} -> agent.useTurnScores: ${mode === 'turn'}`);
  }
  const generation = section('generation');
  if (generation && 'maxNewTokens' in generation) {
    out['agent'] ??= {};
    move(generation, 'maxNewTokens', out['agent'] as Data, 'maxNewTokens', 'generation.maxNewTokens');
    changes.push('generation.maxNewTokens -> agent.maxNewTokens');
  }
  const model = section('model');
  for (const [key, inert] of Object.entries(REMOVED_MODEL)) {
    if (model && key in model && inert(model[key])) {
      delete model[key];
      changes.push(`model.${key} dropped (removed key)`);
    }
  }
  return { data: out, changes };
}
