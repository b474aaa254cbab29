// WebShop: registers RAGEN's `WebShop` tag (a generated catalogue, BM25 search, WebShop's reward, an oracle).
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { solveWebShop } from './solver.js';
import { WebShopEnv, type WebShopConfig } from './webshop-env.js';

export { WebShopEnv, webshopGoal, parseWebShopAction, WEBSHOP_INSTRUCTION, type WebShopConfig, type WebShopAction } from './webshop-env.js';
export { catalogue, type Catalogue, type Product, type Goal } from './catalogue.js';
export { purchaseReward, type PurchaseReward } from './reward.js';
export { searchProducts, TOP_N, PAGE_SIZE } from './search.js';
export { solveWebShop } from './solver.js';
export { DEPARTMENTS } from './vocabulary.js';

/** Actions per episode of RAGEN's `WebShop` tag. */
const MAX_ACTIONS = 9;

/** WebShop's config: see {@link WebShopConfig} for each field's meaning. */
export const webshopSchema = z
  .object({
    catalogueSeed: z.number().int().min(0).default(0),
    numProducts: z.number().int().min(100).max(100_000).default(2600),
    numValGoals: z.number().int().min(1).default(500),
    maxQueryLength: z.number().int().min(1).max(10_000).default(500),
  })
  .refine((c) => c.numValGoals < c.numProducts, { message: 'numValGoals must be below numProducts (one goal per product; train needs the rest)', path: ['numValGoals'] });

registerEnv<WebShopConfig>('WebShop', {
  description: 'WebShop: search a generated catalogue (2,600 products, 13 departments) and buy what the instruction asks for (9 actions).',
  schema: webshopSchema,
  create: (config) => new WebShopEnv(config),
  maxActionsPerEpisode: MAX_ACTIONS,
  solve: (config, seed, mode) => solveWebShop(config, seed, mode, MAX_ACTIONS),
});
