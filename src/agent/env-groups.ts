// The env-group manager (RAGEN's EnvStateManager, inventory section 2.1): envGroups x groupSize envs in
// per-tag blocks, one seed per group, fresh train seeds each reset, fixed val seeds, action caps.
import { ConfigError, type RgbImage } from '../util/index.js';
import {
  envSpec,
  matchActionName,
  resolveEnvConfig,
  resolveEnvId,
  wrapEnv,
  type Env,
  type EnvInfo,
  type EnvMode,
  type EnvSpec,
  type WrapOptions,
} from '../env/index.js';

/** One env tag of a batch (RAGEN's `env_configs.tags` + `n_groups`). */
export interface EnvTagSpec {
  /** A registered env id, e.g. 'SimpleSokoban'. */
  env: string;
  /** Groups of this tag in the batch. */
  nGroups: number;
  /** Config overrides for the env (validated by the registry). */
  config?: Record<string, unknown>;
  /** Override of the registry's per-episode action cap. */
  maxActionsPerEpisode?: number;
  /** Override of the agent's `maxTurns` for this tag. */
  maxTurns?: number;
  /**
   * Reset options per group member. Members share the seed (the initial state); an env with chance
   * after the start can draw it per member, e.g. `(m) => ({ drawSeed: m })` for Bandit, which gives
   * RAGEN's behaviour (its per-instance counter made members' payouts differ). @default none
   */
  resetOptions?: (member: number) => Record<string, unknown>;
  /**
   * Wrappers stacked on each env of this tag, local or remote (`wrapEnv`'s documented order), e.g.
   * `{rewardScale: {scale: 0.1}, observation: {maxChars: 2000}}`. @default only OrderEnforcing
   */
  wrappers?: WrapOptions;
}

/** Settings of an `EnvGroups`. */
export interface EnvGroupsOptions {
  tags: readonly EnvTagSpec[];
  /** Envs per group, all starting from the group's seed. */
  groupSize: number;
  /** 'train': seeds advance at every reset; 'val': the same seeds every time. */
  mode: EnvMode;
  /** First seed (RAGEN `seed.train` = 10000, `seed.val` = 123). */
  seed: number;
}

/** One env of the batch and its episode bookkeeping. */
export interface EnvSlot {
  /** Position in the batch (RAGEN env_id). */
  readonly index: number;
  readonly tag: string;
  /** Group index over the whole batch; members of a group share the seed. */
  readonly group: number;
  /** Position inside the group. */
  readonly member: number;
  readonly env: Env;
  readonly config: Record<string, unknown>;
  readonly spec: EnvSpec;
  readonly maxActions: number;
  readonly maxTurns: number | undefined;
  readonly mode: EnvMode;
  readonly resetOptions: ((member: number) => Record<string, unknown>) | undefined;
  seed: number;
  actionsTaken: number;
  done: boolean;
}

/** What executing one turn's actions did. */
export interface TurnStep {
  /**
   * Every parsed action, in order, with what happened to it. `skipped`: not attempted because the
   * episode ended or the action cap was reached earlier in the turn (neither valid nor invalid).
   */
  actions: {
    action: string;
    valid: boolean;
    effective: boolean;
    reward: number;
    executed: boolean;
    skipped: boolean;
  }[];
  /** Sum of the env rewards of the turn. */
  reward: number;
  observation: string;
  /** The images of `observation` (a visual env's), if it has any. */
  images?: readonly RgbImage[];
  terminated: boolean;
  truncated: boolean;
  /** The last info (or the reset info when nothing was executed). */
  info: EnvInfo;
  /** Actions that were valid. */
  validCount: number;
  /** The episode ended because it used up its action cap (reported as truncated). */
  capReached: boolean;
}

/** Owns the envs of one rollout batch. */
export class EnvGroups {
  readonly slots: EnvSlot[] = [];
  readonly nGroups: number;
  private counter = 0;
  private readonly lastInfo: EnvInfo[] = [];
  private readonly lastObs: string[] = [];
  private readonly lastImages: (readonly RgbImage[] | undefined)[] = [];

  constructor(readonly options: EnvGroupsOptions) {
    if (!Number.isInteger(options.groupSize) || options.groupSize < 1)
      throw new ConfigError(`groupSize must be a positive integer, got ${options.groupSize}.`);
    if (options.tags.length === 0) throw new ConfigError('EnvGroups needs at least one env tag.');
    let group = 0;
    for (const t of options.tags) {
      if (!Number.isInteger(t.nGroups) || t.nGroups < 1)
        throw new ConfigError(`nGroups for env \`${t.env}\` must be a positive integer, got ${t.nGroups}.`);
      const id = resolveEnvId(t.env);
      const spec = envSpec(id);
      const config = resolveEnvConfig(id, t.config ?? {});
      const maxActions = t.maxActionsPerEpisode ?? spec.maxActionsPerEpisode;
      for (let g = 0; g < t.nGroups; g++, group++) {
        for (let m = 0; m < options.groupSize; m++) {
          this.slots.push({
            index: this.slots.length,
            tag: id,
            group,
            member: m,
            env: wrapEnv(spec.create(config), t.wrappers),
            config,
            spec,
            maxActions,
            maxTurns: t.maxTurns,
            mode: options.mode,
            resetOptions: t.resetOptions,
            seed: 0,
            actionsTaken: 0,
            done: false,
          });
        }
      }
    }
    this.nGroups = group;
  }

  /**
   * The seed of every group for the next reset: group g gets `base + g`. Train: `base = seed +
   * counter` and the counter advances by the number of groups (fresh, disjoint seeds each step);
   * val: `base = seed` always. `base` overrides (and, in train, restarts the counter from it).
   */
  nextSeeds(base?: number): number[] {
    let b: number;
    if (base !== undefined) {
      b = base;
      if (this.options.mode === 'train') this.counter = base - this.options.seed + this.nGroups;
    } else if (this.options.mode === 'train') {
      b = this.options.seed + this.counter;
      this.counter += this.nGroups;
    } else {
      b = this.options.seed;
    }
    return Array.from({ length: this.nGroups }, (_, g) => b + g);
  }

  /** Reset every env (concurrently); returns the initial observations in slot order. */
  async reset(base?: number): Promise<string[]> {
    const seeds = this.nextSeeds(base);
    const results = await Promise.all(
      this.slots.map(async (slot) => {
        slot.seed = seeds[slot.group]!;
        slot.actionsTaken = 0;
        slot.done = false;
        const options = slot.resetOptions?.(slot.member);
        return slot.env.reset({ seed: slot.seed, mode: this.options.mode, ...(options ? { options } : {}) });
      }),
    );
    results.forEach((r, i) => {
      this.lastInfo[i] = r.info;
      this.lastObs[i] = r.observation;
      this.lastImages[i] = r.images;
    });
    return results.map((r) => r.observation);
  }

  /** The images of the slot's current observation (a visual env's), or undefined. */
  imagesOf(slot: EnvSlot): readonly RgbImage[] | undefined {
    return this.lastImages[slot.index];
  }

  /** Actions the slot may still take this episode. */
  actionsLeft(slot: EnvSlot): number {
    return Math.max(0, slot.maxActions - slot.actionsTaken);
  }

  /**
   * Execute up to `actionsLeft` of `actions` in order, stopping when the episode ends. Names that
   * match none of the env's action names are invalid and not sent to the env (RAGEN's action
   * lookup); they do not count against the cap. Reaching the cap ends the episode as truncated.
   */
  async step(slot: EnvSlot, actions: readonly string[]): Promise<TurnStep> {
    const out: TurnStep = {
      actions: [],
      reward: 0,
      observation: this.lastObs[slot.index]!,
      ...(this.lastImages[slot.index] ? { images: this.lastImages[slot.index] } : {}),
      terminated: false,
      truncated: false,
      info: this.lastInfo[slot.index]!,
      validCount: 0,
      capReached: false,
    };
    for (const action of actions) {
      if (slot.done || this.actionsLeft(slot) === 0) {
        out.actions.push({ action, valid: false, effective: false, reward: 0, executed: false, skipped: true });
        continue;
      }
      const names = slot.env.actionNames;
      if (names && matchActionName(names, action) < 0) {
        out.actions.push({ action, valid: false, effective: false, reward: 0, executed: false, skipped: false });
        continue;
      }
      const r = await slot.env.step(action);
      slot.actionsTaken++;
      out.reward += r.reward;
      out.observation = r.observation;
      if (r.images) out.images = r.images;
      else delete out.images;
      out.info = r.info;
      const valid = r.info.actionIsValid;
      if (valid) out.validCount++;
      out.actions.push({
        action,
        valid,
        effective: valid && r.info.actionIsEffective,
        reward: r.reward,
        executed: true,
        skipped: false,
      });
      if (r.terminated || r.truncated) {
        out.terminated = r.terminated;
        out.truncated = r.truncated;
        slot.done = true;
      }
    }
    if (!slot.done && this.actionsLeft(slot) === 0) {
      out.truncated = true;
      out.capReached = true;
      slot.done = true;
    }
    this.lastObs[slot.index] = out.observation;
    this.lastImages[slot.index] = out.images;
    this.lastInfo[slot.index] = out.info;
    return out;
  }

  /** Close every env. */
  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.env.close()));
  }
}
