// The two-armed bandit of RAGEN (section 1.3 of the inventory): arms named by a (low-risk, high-risk)
// profession pair, one pull, a steady 0.1 against a 1.0 paid a quarter of the time.
import { z } from 'zod';
import { ResetNeededError, Rng } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  matchActionName,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';

/** (low-risk, high-risk) profession pairs for the `train` split (the `Bandit` id). */
export const TRAIN_PAIRS: readonly (readonly [string, string])[] = [
  ['Accountant', 'DayTrader'],
  ['Librarian', 'Stuntman'],
  ['Pharmacist', 'PokerPlayer'],
  ['Postman', 'StormChaser'],
  ['Dentist', 'VentureCapitalist'],
  ['Bookkeeper', 'TreasureHunter'],
  ['Clerk', 'Speculator'],
  ['Plumber', 'Gambler'],
  ['Auditor', 'Prospector'],
  ['Archivist', 'TestPilot'],
  ['Actuary', 'BigWaveSurfer'],
  ['Cashier', 'Daredevil'],
];

/** (low-risk, high-risk) profession pairs for the `test` split (the `BanditTest` id), disjoint from train. */
export const TEST_PAIRS: readonly (readonly [string, string])[] = [
  ['Surveyor', 'Mountaineer'],
  ['Tailor', 'RaceDriver'],
  ['Notary', 'Wildcatter'],
  ['Optician', 'Skydiver'],
  ['Registrar', 'CryptoTrader'],
  ['Janitor', 'BountyHunter'],
  ['Bailiff', 'Adventurer'],
  ['Typist', 'HedgeFundManager'],
];

/** Bandit settings (RAGEN's `BanditEnvConfig`, camelCased). */
export const banditSchema = z.object({
  /** Which name pairs to draw from: `train` (12 pairs) or `test` (8 other pairs). @default 'train' */
  split: z.enum(['train', 'test']).default('train'),
  /** Reward of the low-risk arm, paid every time. @default 0.1 */
  loArmScore: z.number().finite().default(0.1),
  /** Reward of the high-risk arm when it pays. @default 1.0 */
  hiArmHiscore: z.number().finite().default(1.0),
  /** Reward of the high-risk arm when it does not pay. @default 0 */
  hiArmLoscore: z.number().finite().default(0),
  /** Probability that the high-risk arm pays `hiArmHiscore`. @default 0.25 */
  hiArmHiscoreProb: z.number().min(0).max(1).default(0.25),
});

export type BanditConfig = z.infer<typeof banditSchema>;

/** The arm names of a seed, in arm order, and which position holds the high-risk arm. */
export function banditArms(
  split: 'train' | 'test',
  seed: number,
): { names: [string, string]; highArm: 0 | 1; rng: Rng } {
  const rng = new Rng(seed);
  const pairs = split === 'train' ? TRAIN_PAIRS : TEST_PAIRS;
  const [low, high] = pairs[rng.int(pairs.length)]!;
  const highArm = rng.int(2) as 0 | 1;
  return { names: highArm === 1 ? [low, high] : [high, low], highArm, rng };
}

/**
 * ## Description
 * A one-step, two-armed bandit whose arms are named after professions. One name suggests a safe,
 * steady income (the low-risk arm, always `loArmScore` = 0.1), the other a risky one (the high-risk
 * arm, `hiArmHiscore` = 1.0 with probability 0.25, else 0). The high-risk arm has the higher expected
 * value (0.25 > 0.1), so a policy that reads the names' meaning should pick it.
 *
 * ## Action space
 * The two arm names (`actionNames`, case-insensitive exact match). They change at every reset.
 *
 * ## Observation
 * A prompt naming both arms; after the pull, `"<name>: <reward> points"`.
 *
 * ## Starting state
 * The seed picks the name pair from the split and which arm position each name takes.
 *
 * ## Rewards
 * The pulled arm's payout. An invalid action (not an arm's name) earns 0 and changes nothing.
 *
 * ## Episode end
 * Terminated after the first valid pull.
 *
 * ## Info
 * `success`: the high-risk arm was pulled. `highRisk`: 1 if the high-risk arm was pulled, else 0.
 *
 * ## Randomness
 * `reset({seed})` fixes the names and the payout draw, so the same seed gives the same trajectory.
 * RAGEN gives group members (same seed) different payout draws through a per-instance counter; here
 * that is explicit: `reset({seed, options: {drawSeed: k}})` draws the payout from (seed, k) while the
 * names still come from the seed alone.
 */
export class BanditEnv implements Env {
  readonly instruction = 'You are playing a two-armed bandit. Pull one arm by answering with its name.';
  readonly legend = '';
  private names: [string, string] | undefined;
  private highArm: 0 | 1 = 1;
  private payoutDraw = 0;
  private observation = '';
  private done = true;

  constructor(readonly config: BanditConfig) {}

  get actionNames(): readonly string[] {
    return this.names ?? [];
  }

  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('Bandit', options, ['drawSeed']);
    const arms = banditArms(this.config.split, seed);
    this.names = arms.names;
    this.highArm = arms.highArm;
    const drawSeed = options?.['drawSeed'];
    if (drawSeed !== undefined && !Number.isSafeInteger(drawSeed)) {
      throw new RangeError(`Bandit reset option drawSeed must be a safe integer, got ${JSON.stringify(drawSeed)}`);
    }
    const drawRng =
      drawSeed === undefined
        ? arms.rng
        : new Rng((arms.rng.nextUint32() ^ new Rng(drawSeed as number).nextUint32()) >>> 0);
    this.payoutDraw = drawRng.random();
    this.done = false;
    const [a, b] = this.names;
    this.observation =
      `You face two slot-machine arms, each named after a profession: ${a} and ${b}. ` +
      'One arm pays a small reward every time; the other pays a large reward only sometimes. ' +
      'Judging by what the names suggest, choose the arm you expect to pay more on average. ' +
      `Answer with the arm's name: ${a} or ${b}.`;
    return { observation: this.observation, info: { success: false, actionIsValid: true, actionIsEffective: false } };
  }

  step(action: string): StepResult {
    if (this.names === undefined) throw new ResetNeededError('Bandit: call reset({seed}) before step().');
    if (this.done)
      throw new ResetNeededError('Bandit: the episode ended (one pull per episode); call reset({seed}) for a new one.');
    const arm = matchActionName(this.names, action);
    if (arm < 0) {
      const shown = action.length > 40 ? `${action.slice(0, 40)}...` : action;
      const info = invalidInfo(`${JSON.stringify(shown)} is not an arm; answer ${this.names[0]} or ${this.names[1]}.`, {
        highRisk: 0,
      });
      return { observation: this.observation, reward: 0, terminated: false, truncated: false, info };
    }
    const high = arm === this.highArm;
    const c = this.config;
    const reward = high ? (this.payoutDraw < c.hiArmHiscoreProb ? c.hiArmHiscore : c.hiArmLoscore) : c.loArmScore;
    this.done = true;
    this.observation = `${this.names[arm]}: ${reward} points`;
    const info: EnvInfo = { success: high, actionIsValid: true, actionIsEffective: true, highRisk: high ? 1 : 0 };
    return { observation: this.observation, reward, terminated: true, truncated: false, info };
  }

  render(): string {
    return this.observation;
  }

  close(): void {}
}
