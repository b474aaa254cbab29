// WebShop's purchase reward: attribute, option and price matches scaled by a product-type match.
// Follows WebShop's web_agent_site/engine/goal.py get_reward, with exact phrase matching in place of fuzzy.
import type { Goal, Product } from './catalogue.js';

/** The parts of a purchase's reward, WebShop's `r_type`, `r_att`, `r_option`, `r_price` and the total. */
export interface PurchaseReward {
  rType: number;
  attributeMatches: number;
  optionMatches: number;
  priceOk: boolean;
  /** In [0, 1]; 1 exactly when everything the goal asks for matches. */
  total: number;
}

/**
 * The raw reward of buying `product` with `chosen` options for `goal`:
 * `(attributes matched + options matched + price ok) / (goal attributes + goal options + 1) * r_type`.
 * `r_type` is 1 for the goal's product type, 0.5 for another type of the same department and 0.1
 * otherwise (WebShop derives it from query, category and title-noun overlap). An attribute matches when
 * the product has it or its title says it (WebShop: fuzzy match against attributes, title and
 * description); an option matches when the chosen value for that dimension equals the goal's.
 */
export function purchaseReward(goal: Goal, product: Product, chosen: Readonly<Record<string, string>>): PurchaseReward {
  const rType = product.type === goal.type ? 1 : product.category === goal.category ? 0.5 : 0.1;
  const title = product.title.toLowerCase();
  const attributeMatches = goal.attributes.filter((a) => product.attributes.includes(a) || title.includes(a)).length;
  const optionMatches = Object.entries(goal.options).filter(([dim, v]) => chosen[dim] === v).length;
  const priceOk = product.price <= goal.priceUpper;
  const n = goal.attributes.length + Object.keys(goal.options).length + 1;
  const total = ((attributeMatches + optionMatches + (priceOk ? 1 : 0)) / n) * rType;
  return { rType, attributeMatches, optionMatches, priceOk, total };
}
