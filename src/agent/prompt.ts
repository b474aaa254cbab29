// The prompt text of RAGEN's context manager (inventory section 2.2), with its errors fixed: the legend
// is the env's own (what it really renders), and both action limits (per turn, per episode) are stated.
import type { RgbImage } from '../util/index.js';
import type { AgentConfig } from './config.js';

/** What the system prompt needs to know about an env (after its reset: Bandit renames its arms). */
export interface PromptEnv {
  instruction: string;
  legend: string;
  actionNames: readonly string[] | undefined;
  /** The per-episode action cap the manager enforces. */
  maxActionsPerEpisode: number;
}

/** The tag the prompt prefills at generation: the model continues after it. */
export function prefillText(cfg: Pick<AgentConfig, 'enableThink'>): string {
  return cfg.enableThink ? '<think>' : '<answer>';
}

/** The response format line of every turn. */
export function formatInstruction(cfg: Pick<AgentConfig, 'enableThink'>): string {
  return cfg.enableThink
    ? '<think> [Your thoughts] </think> <answer> [your answer] </answer>'
    : '<answer> [your answer] </answer>';
}

/** A reward as the prompt prints it: at most 4 decimals, no float noise (-0.30000000000000004 -> -0.3). */
export function formatReward(r: number): string {
  return String(Number(r.toFixed(4)));
}

/** The system message: assistant line, env instruction, legend, actions and the two action limits. */
export function systemPrompt(
  env: PromptEnv,
  cfg: Pick<AgentConfig, 'systemPrefix' | 'maxActionsPerTurn' | 'actionSep'>,
): string {
  const perTurn = Math.min(cfg.maxActionsPerTurn, env.maxActionsPerEpisode);
  const parts = [[cfg.systemPrefix, env.instruction].filter((s) => s.length > 0).join(' ')];
  if (env.legend) parts.push(env.legend);
  const sep = ` ${cfg.actionSep} `;
  const noun = env.actionNames ? 'action' : 'answer';
  if (env.actionNames && env.actionNames.length > 0)
    parts.push(`Your available actions are: ${env.actionNames.join(', ')}.`);
  const limit =
    perTurn > 1
      ? `You can give up to ${perTurn} ${noun}s per turn, separated by "${sep}", and up to ${env.maxActionsPerEpisode} ${noun}s in the whole episode.`
      : `You can give 1 ${noun} per turn, and up to ${env.maxActionsPerEpisode} ${noun}${env.maxActionsPerEpisode === 1 ? '' : 's'} in the whole episode.`;
  parts.push(limit);
  return parts.join('\n');
}

/** What one turn's user message shows. */
export interface TurnView {
  /** 1-based turn number. */
  turn: number;
  /** The observation at the start of the turn. */
  state: string;
  /**
   * The observation's images (a visual env's). Chat messages for a chat API show each after the state text; the
   * prompt ids of a text-only model leave them out.
   */
  images?: readonly RgbImage[];
  /** Actions left in the episode before this turn. */
  actionsLeft: number;
  /** The previous turn's env reward (without the format penalty, as RAGEN shows it); shown when defined. */
  previousReward?: number;
  /** The previous turn gave no valid action. */
  invalidWarning: boolean;
}

/** The warning after a turn that gave no valid action (RAGEN's "No valid action provided previously"). */
export const INVALID_WARNING = 'Your last response had no valid action, so the state has not changed. Try again.';

/** The user message of one turn. */
export function turnPrompt(view: TurnView, cfg: Pick<AgentConfig, 'enableThink' | 'maxNewTokens'>): string {
  let s = view.previousReward !== undefined ? `Reward: ${formatReward(view.previousReward)}\n` : '';
  s += `Turn ${view.turn}:\nState:\n${view.state}\n`;
  if (view.invalidWarning) s += `${INVALID_WARNING}\n`;
  s += `You have ${view.actionsLeft} action${view.actionsLeft === 1 ? '' : 's'} left. Always output: ${formatInstruction(cfg)} with no extra text. `;
  s += `Strictly follow this format. Max response length: ${cfg.maxNewTokens} tokens.`;
  return s;
}

/** A finished turn as the single-turn summary shows it. */
export interface TurnSummary {
  turn: number;
  state: string;
  actions: readonly string[];
  reward: number;
}

/**
 * The user message of `single_turn` mode: the last turns inlined as text (RAGEN's SimpleMemory),
 * then the current turn. `totalDone` counts every finished turn, shown or not.
 */
export function singleTurnPrompt(
  shown: readonly TurnSummary[],
  totalDone: number,
  current: TurnView,
  cfg: Pick<AgentConfig, 'enableThink' | 'maxNewTokens' | 'actionSep'>,
): string {
  let s = '';
  if (totalDone > 0) {
    s += `Summary: ${totalDone} turn${totalDone === 1 ? '' : 's'} done so far`;
    s += shown.length > 0 ? `; the last ${shown.length} shown below.\n` : '.\n';
    for (const t of shown) {
      const acts = t.actions.length > 0 ? t.actions.join(` ${cfg.actionSep} `) : 'none (no valid action)';
      s += `Turn ${t.turn}:\nState:\n${t.state}\nActions: ${acts}\nReward: ${formatReward(t.reward)}\n`;
    }
  }
  return s + turnPrompt({ ...current, previousReward: undefined }, cfg);
}
