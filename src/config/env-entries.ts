// The two kinds of `env.train` / `env.val` entries: built-in envs (`tag`) and agent programs run through the training
// gateway (`agent`). One place says which an entry is, what its metric tag is, and what makes an entry malformed.
import type { AgentProgramConfig } from '../agent/index.js';
import type { RagenConfig } from './schema.js';

type Split = 'train' | 'val';
type Entry = RagenConfig['env']['train'][number];

/** An agent entry of a split, with its metric tag and its position in the split. */
export interface AgentEntry {
  index: number;
  /** The metric tag (`train/<name>/success`): `name`, else `agent` or `agent-<index>`. */
  name: string;
  program: AgentProgramConfig;
  groups: number;
  groupSize: number;
}

/** The metric tag of agent entry `i` of `entries` (see AgentEntry.name). */
export function agentEntryName(entries: readonly Entry[], i: number): string {
  const own = entries[i]!.name;
  if (own !== undefined) return own;
  return entries.filter((e) => e.agent !== undefined).length > 1 ? `agent-${i}` : 'agent';
}

/** The agent entries of a split, in config order. */
export function agentEntries(config: RagenConfig, split: Split): AgentEntry[] {
  const entries = config.env[split];
  return entries.flatMap((e, index) =>
    e.agent === undefined
      ? []
      : [
          {
            index,
            name: agentEntryName(entries, index),
            program: e.agent as AgentProgramConfig,
            groups: e.groups,
            groupSize: e.groupSize,
          },
        ],
  );
}

/** The built-in env entries of a split (those with a `tag`), in config order. */
export function tagEntries(config: RagenConfig, split: Split): (Entry & { tag: string })[] {
  return config.env[split].filter((e): e is Entry & { tag: string } => e.tag !== undefined);
}

/** Every built-in env tag of the config (train and val). */
export function envTags(config: RagenConfig): string[] {
  return [...tagEntries(config, 'train'), ...tagEntries(config, 'val')].map((e) => e.tag);
}

/** The metric tag of every entry of a split (an env's tag, or an agent entry's name), in config order. */
export function entryTags(config: RagenConfig, split: Split): string[] {
  const entries = config.env[split];
  return entries.map((e, i) => e.tag ?? agentEntryName(entries, i));
}

/** The malformed entries of both splits, one sentence each (naming the entry and the fix). */
export function entryErrors(config: RagenConfig): string[] {
  const out: string[] = [];
  for (const split of ['train', 'val'] as const) {
    const entries = config.env[split];
    entries.forEach((e, i) => {
      const key = `env.${split}.${i}`;
      if (e.tag !== undefined && e.agent !== undefined)
        out.push(
          `Bad config: \`${key}\` has both \`tag\` (${JSON.stringify(e.tag)}) and \`agent\`; an entry is a built-in env or an agent program, so keep one and move the other to an entry of its own.`,
        );
      else if (e.tag === undefined && e.agent === undefined)
        out.push(
          `Bad config: \`${key}\` has neither \`tag\` nor \`agent\`; give a built-in env (\`tag: SimpleSokoban\`) or an agent program (\`agent: {command: "node my-agent.mjs", timeoutS: 60}\`).`,
        );
      else if (e.tag !== undefined && e.name !== undefined)
        out.push(
          `Bad config: \`${key}.name\` = ${JSON.stringify(e.name)} is only for \`agent\` entries; a built-in env's metric tag is its \`tag\` (${JSON.stringify(e.tag)}), so drop \`name\`.`,
        );
    });
    const tags = entryTags(config, split);
    const dup = tags.find((t, i) => {
      const j = tags.indexOf(t);
      return j !== i && (entries[i]!.agent !== undefined || entries[j]!.agent !== undefined);
    });
    if (dup !== undefined)
      out.push(
        `Bad config: two entries of \`env.${split}\` report as \`${dup}\`; give each agent entry its own \`name\` (its metric tag).`,
      );
  }
  if (config.trainer.async.enabled && config.env.train.some((e) => e.agent !== undefined)) {
    out.push(
      'Bad config: `trainer.async.enabled` = true, but `env.train` has agent entries, which roll out on the current policy only; set `trainer.async.enabled=false` (or train built-in envs only).',
    );
  }
  return out;
}
