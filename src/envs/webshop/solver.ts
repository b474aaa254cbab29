// The WebShop oracle: search the goal's attributes and type, open the first result that meets the goal
// (paging on if needed), click the goal's options and buy. Falls back to searching the goal product's title.
import type { EnvMode } from '../../env/index.js';
import { catalogue, type Catalogue, type Goal } from './catalogue.js';
import { purchaseReward } from './reward.js';
import { PAGE_SIZE, searchProducts } from './search.js';
import { webshopGoal, type WebShopConfig } from './webshop-env.js';

/** Whether buying the product `asin` with the goal's option values would earn the full reward. */
function meetsGoal(shop: Catalogue, goal: Goal, asin: string): boolean {
  const p = shop.byAsin.get(asin)!;
  if (!Object.entries(goal.options).every(([dim, v]) => p.options[dim]?.includes(v))) return false;
  return purchaseReward(goal, p, goal.options).total >= 1;
}

/** The actions after the search that reach result `index` (0-based), pick the options and buy. */
function buyPlan(goal: Goal, index: number, asin: string): string[] {
  const pages = Math.floor(index / PAGE_SIZE);
  return [
    ...Array.from({ length: pages }, () => 'click[next >]'),
    `click[${asin.toLowerCase()}]`,
    ...Object.values(goal.options).map((v) => `click[${v}]`),
    'click[buy now]',
  ];
}

/**
 * A winning action sequence for the goal of `seed`, at most `maxActions` long, or `undefined` when
 * neither query finds a product that meets the goal within that many actions.
 */
export function solveWebShop(
  config: WebShopConfig,
  seed: number,
  mode: EnvMode = 'train',
  maxActions = 9,
): string[] | undefined {
  const shop = catalogue(config.catalogueSeed, config.numProducts);
  const goal = webshopGoal(config, seed, mode);
  const target = shop.byAsin.get(goal.asin)!;
  for (const query of [`${goal.attributes.join(' ')} ${goal.type}`, target.title]) {
    const results = searchProducts(shop, query);
    for (let i = 0; i < results.length; i++) {
      if (!meetsGoal(shop, goal, results[i]!)) continue;
      const plan = [`search[${query}]`, ...buyPlan(goal, i, results[i]!)];
      if (plan.length <= maxActions) return plan;
      break;
    }
  }
  return undefined;
}
