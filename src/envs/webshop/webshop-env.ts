// The WebShop environment: find and buy the product an instruction asks for on a simulated web shop.
// Follows RAGEN's ragen/env/webshop (over WebShop's WebAgentTextEnv), on a generated catalogue.
import { z } from 'zod';
import { ResetNeededError } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type EnvMode,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { catalogue, type Catalogue, type Goal } from './catalogue.js';
import {
  availableActions,
  BACK_TO_SEARCH,
  BUY_NOW,
  clickables,
  hasSearchBar,
  lastPage,
  NEXT,
  PREV,
  renderPage,
  type DetailSection,
  type Page,
} from './pages.js';
import { purchaseReward } from './reward.js';
import { searchProducts } from './search.js';

/** WebShop's configuration. */
export const webshopSchema = z
  .object({
    /** Seed of the generated catalogue and its goals (the episode seed picks the goal). @default 0 */
    catalogueSeed: z.number().int().min(0).default(0),
    /** Products in the catalogue, spread over 13 departments; one goal is made from each. @default 2600 */
    numProducts: z.number().int().min(100).max(100_000).default(2600),
    /**
     * Goals reserved for `val` mode; `train` uses the rest (RAGEN: 500 test, 1000 val, the rest train). @default 500
     */
    numValGoals: z.number().int().min(1).default(500),
    /** Longest accepted search query in characters; longer ones are invalid actions. @default 500 */
    maxQueryLength: z.number().int().min(1).max(10_000).default(500),
  })
  .refine((c) => c.numValGoals < c.numProducts, {
    message: 'numValGoals must be below numProducts (one goal per product; train needs the rest)',
    path: ['numValGoals'],
  });

export type WebShopConfig = z.infer<typeof webshopSchema>;

export const WEBSHOP_INSTRUCTION =
  'You are browsing an online shop. Follow the instruction to find and buy the product that matches it. ' +
  'Actions: search[keywords] on the search page, click[name] on any other page, where name is one of the ' +
  'clickable items the page lists (a product id, an option value, description, features, reviews, buy now, ' +
  '< prev, next >, back to search). Select every option the instruction asks for before you click[buy now]. ' +
  'We must buy a product within 9 actions and should not search more than twice.';

/** The goal an episode poses for `seed` in `mode` (the one `reset({seed, mode})` poses). */
export function webshopGoal(config: WebShopConfig, seed: number, mode: EnvMode = 'train'): Goal {
  const { goals } = catalogue(config.catalogueSeed, config.numProducts);
  const numVal = Math.min(config.numValGoals, goals.length - 1);
  const mod = (a: number, n: number): number => ((a % n) + n) % n;
  return mode === 'val' ? goals[mod(seed, numVal)]! : goals[numVal + mod(seed, goals.length - numVal)]!;
}

/**
 * WebShop.
 *
 * ## Description
 * An instruction asks for a product with some attributes, option values (size, colour, flavour...) and
 * a price bound ("i'm looking for gluten free protein bars with flavor: berry, and price lower than 30.00
 * dollars"). The agent searches a catalogue of generated products (BM25), pages through results, opens
 * items, picks options and buys. Any product that meets the instruction earns the full reward.
 *
 * ## Action Space
 * `search[keywords]` (only on the search page) and `click[name]` with a name the page lists, matched
 * case-insensitively. Anything else (another verb, an empty or unknown name, a search away from the
 * search page, a query over `maxQueryLength`) is invalid: the page stays as it was.
 *
 * ## Observation
 * The page in WebShop's text form ("Instruction: [SEP] ... [SEP] Back to Search [SEP] Page 1 ...") and a
 * line listing the available actions; after an invalid action, one more line saying why.
 *
 * ## Starting State
 * The search page with a goal made from one product: `val` mode draws from the first `numValGoals`
 * goals, `train` from the rest, the seed picking one (`seed mod n`).
 *
 * ## Rewards
 * 0 until `click[buy now]`; then WebShop's raw reward (`purchaseReward`: attribute, option and price
 * matches times the product-type match) binarised as RAGEN does: 1 if raw >= 1, else 0.
 *
 * ## Episode End
 * Terminated by `click[buy now]`. No truncation here (RAGEN's tag caps an episode at 9 actions).
 *
 * ## Info
 * `success` (binarised reward 1), `rawReward`, `successPurchase` (bought anything), `successFind` (opened
 * the item page of the product the goal was made from), `endOfPage` (on the last page of results),
 * `actionIsValid`, `actionIsEffective` (the page changed), `reason`.
 *
 * ## Arguments
 * See {@link WebShopConfig}.
 */
export class WebShopEnv implements Env {
  readonly instruction = WEBSHOP_INSTRUCTION;
  readonly legend = '';
  readonly actionNames = undefined;
  private readonly shop: Catalogue;
  private goal: Goal | undefined;
  private page: Page = { kind: 'search' };
  private found = false;

  constructor(readonly config: WebShopConfig) {
    this.shop = catalogue(config.catalogueSeed, config.numProducts);
  }

  reset({ seed, mode = 'train', options }: ResetOptions): ResetResult {
    checkResetOptions('WebShop', options, []);
    this.goal = webshopGoal(this.config, seed, mode);
    this.page = { kind: 'search' };
    this.found = false;
    return { observation: this.render(), info: this.info(true, true) };
  }

  step(action: string): StepResult {
    if (this.goal === undefined)
      throw new ResetNeededError('WebShop.step() called before reset(); call reset({seed}) first.');
    if (this.page.kind === 'done')
      throw new ResetNeededError(
        'WebShop.step() called after the purchase ended the episode; call reset({seed}) to start a new one.',
      );
    const parsed = parseWebShopAction(action);
    if (!parsed.ok) return this.invalid(parsed.reason);
    const before = this.render();
    let next: Page | string;
    if (parsed.verb === 'search') {
      if (!hasSearchBar(this.page))
        return this.invalid('there is no search bar on this page; click[back to search] first');
      if (parsed.arg.length > this.config.maxQueryLength)
        return this.invalid(
          `the query has ${parsed.arg.length} characters, more than maxQueryLength ${this.config.maxQueryLength}`,
        );
      next = { kind: 'results', query: parsed.arg, asins: searchProducts(this.shop, parsed.arg), page: 1 };
    } else {
      next = this.click(parsed.arg.toLowerCase());
    }
    if (typeof next === 'string') return this.invalid(next);
    this.page = next;
    if (next.kind === 'item' && next.asin === this.goal.asin) this.found = true;
    if (next.kind === 'done') {
      const success = next.rawReward >= 1;
      return {
        observation: this.render(),
        reward: success ? 1 : 0,
        terminated: true,
        truncated: false,
        info: this.info(true, true, success),
      };
    }
    const observation = this.render();
    return {
      observation,
      reward: 0,
      terminated: false,
      truncated: false,
      info: this.info(true, observation !== before),
    };
  }

  /** The page after clicking `name`, or why the click is invalid. */
  private click(name: string): Page | string {
    const page = this.page;
    const allowed = clickables(page, this.shop);
    if (!allowed.includes(name)) {
      const list = allowed.length > 0 ? allowed.join(', ') : 'nothing (use search[...])';
      return `"${name.slice(0, 60)}" is not clickable on this page; clickable: ${list}`;
    }
    if (name === BACK_TO_SEARCH) return { kind: 'search' };
    switch (page.kind) {
      case 'results':
        if (name === NEXT) return { ...page, page: Math.min(page.page + 1, lastPage(page)) };
        if (name === PREV) return { ...page, page: Math.max(1, page.page - 1) };
        return { kind: 'item', asin: name.toUpperCase(), chosen: {}, back: page };
      case 'item': {
        if (name === PREV) return page.back;
        if (name === BUY_NOW) {
          const product = this.shop.byAsin.get(page.asin)!;
          return {
            kind: 'done',
            asin: page.asin,
            chosen: page.chosen,
            rawReward: purchaseReward(this.goal!, product, page.chosen).total,
          };
        }
        if (name === 'description' || name === 'features' || name === 'reviews')
          return { kind: 'detail', section: name as DetailSection, item: page };
        const product = this.shop.byAsin.get(page.asin)!;
        const dim = Object.keys(product.options).find((d) => product.options[d]!.includes(name))!;
        return { ...page, chosen: { ...page.chosen, [dim]: name } };
      }
      case 'detail':
        return page.item; // < prev
      default:
        return `"${name}" cannot be clicked here`;
    }
  }

  private invalid(reason: string): StepResult {
    return {
      observation: `${this.render()}\nInvalid action: ${reason}`,
      reward: 0,
      terminated: false,
      truncated: false,
      info: { ...invalidInfo(reason), ...this.extra() },
    };
  }

  render(): string {
    if (this.goal === undefined) return '';
    const text = renderPage(this.page, this.shop, this.goal.instruction);
    if (this.page.kind === 'done') return text;
    return `${text}\nAvailable actions: ${availableActions(this.page, this.shop).join(', ')}`;
  }

  close(): void {}

  private info(valid: boolean, effective: boolean, success = false): EnvInfo {
    return { success, actionIsValid: valid, actionIsEffective: effective, ...this.extra() };
  }

  private extra(): { rawReward: number; successPurchase: boolean; successFind: boolean; endOfPage: boolean } {
    const p = this.page;
    return {
      rawReward: p.kind === 'done' ? p.rawReward : 0,
      successPurchase: p.kind === 'done',
      successFind: this.found,
      endOfPage: p.kind === 'results' && p.page === lastPage(p),
    };
  }
}

/** A parsed WebShop action, or why it is not one. */
export type WebShopAction = { ok: true; verb: 'search' | 'click'; arg: string } | { ok: false; reason: string };

/**
 * Parses `search[...]` / `click[...]` as WebShop's `parse_action` does (verb, then the text between the
 * first `[` and the last `]`), with the verb case-insensitive and the argument trimmed. An empty
 * argument or another verb is not an action.
 */
export function parseWebShopAction(text: string): WebShopAction {
  const s = text.trim();
  const open = s.indexOf('[');
  if (open < 0 || !s.endsWith(']'))
    return { ok: false, reason: `expected search[keywords] or click[name], got ${JSON.stringify(s.slice(0, 60))}` };
  const verb = s.slice(0, open).trim().toLowerCase();
  if (verb !== 'search' && verb !== 'click')
    return {
      ok: false,
      reason: `unknown action ${JSON.stringify(verb.slice(0, 30))}; use search[keywords] or click[name]`,
    };
  const arg = s
    .slice(open + 1, -1)
    .replace(/\s+/g, ' ')
    .trim();
  if (arg === '')
    return { ok: false, reason: `${verb}[] needs ${verb === 'search' ? 'keywords' : 'a name'} between the brackets` };
  return { ok: true, verb, arg };
}
