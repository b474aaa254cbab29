// WebShop: registers RAGEN's `WebShop` tag (a generated catalogue, BM25 search, WebShop's reward, an oracle).
import { registerEnv } from '../../env/index.js';
import { solveWebShop } from './solver.js';
import { WebShopEnv, type WebShopConfig, webshopSchema } from './webshop-env.js';

export {
  WebShopEnv,
  webshopGoal,
  parseWebShopAction,
  WEBSHOP_INSTRUCTION,
  type WebShopConfig,
  type WebShopAction,
  webshopSchema,
} from './webshop-env.js';
export { catalogue, type Catalogue, type Product, type Goal } from './catalogue.js';
export { purchaseReward, type PurchaseReward } from './reward.js';
export { searchProducts, TOP_N, PAGE_SIZE } from './search.js';
export { solveWebShop } from './solver.js';
export { DEPARTMENTS } from './vocabulary.js';

/** Actions per episode of RAGEN's `WebShop` tag. */
const MAX_ACTIONS = 9;

registerEnv<WebShopConfig>('WebShop', {
  description:
    'WebShop: search a generated catalogue (2,600 products, 13 departments) and buy what the instruction asks for (9 actions).',
  schema: webshopSchema,
  create: (config) => new WebShopEnv(config),
  maxActionsPerEpisode: MAX_ACTIONS,
  solve: (config, seed, mode) => solveWebShop(config, seed, mode, MAX_ACTIONS),
});
