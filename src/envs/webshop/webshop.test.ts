import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { checkRegisteredEnv, HOSTILE_ACTIONS, envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import { EXCLUSIVE_ATTRIBUTES } from './vocabulary.js';
import {
  catalogue,
  parseWebShopAction,
  purchaseReward,
  searchProducts,
  webshopGoal,
  type Goal,
  type Product,
  type WebShopConfig,
} from './index.js';

const config = resolveEnvConfig('WebShop') as WebShopConfig;
const shop = catalogue(config.catalogueSeed, config.numProducts);

describe('the WebShop catalogue', () => {
  test('has at least 2,000 products over at least 10 departments, each complete', () => {
    expect(shop.products.length).toBeGreaterThanOrEqual(2000);
    expect(new Set(shop.products.map((p) => p.category)).size).toBeGreaterThanOrEqual(10);
    expect(new Set(shop.products.map((p) => p.asin)).size).toBe(shop.products.length);
    for (const p of shop.products) {
      expect(p.title.length).toBeGreaterThan(10);
      expect(p.description.length).toBeGreaterThan(20);
      expect(p.attributes.length).toBeGreaterThanOrEqual(2);
      expect(p.price).toBeGreaterThan(0);
      const values = Object.values(p.options).flat();
      expect(new Set(values).size).toBe(values.length); // a click names one option value unambiguously
      for (const group of EXCLUSIVE_ATTRIBUTES)
        expect(p.attributes.filter((a) => group.includes(a)).length).toBeLessThanOrEqual(1);
    }
    expect(shop.products.filter((p) => Object.keys(p.options).length === 2).length).toBeGreaterThan(
      shop.products.length / 2,
    );
  });

  test('is the same for the same seed and differs for another', () => {
    const again = catalogue(0, 300);
    const other = catalogue(1, 300);
    expect(again.products.map((p) => p.title)).toEqual(catalogue(0, 300).products.map((p) => p.title));
    expect(other.products.map((p) => p.title)).not.toEqual(again.products.map((p) => p.title));
  });

  test('makes goals from a product: its attributes, its option values, a price bound above its price', () => {
    for (const g of shop.goals.slice(0, 300)) {
      const p = shop.byAsin.get(g.asin)!;
      expect(g.type).toBe(p.type);
      for (const a of g.attributes) expect(p.attributes).toContain(a);
      for (const [dim, v] of Object.entries(g.options)) expect(p.options[dim]).toContain(v);
      expect(g.priceUpper).toBeGreaterThan(p.price);
      expect(g.instruction).toContain(g.type);
      expect(g.instruction).toContain(`${g.priceUpper.toFixed(2)} dollars`);
    }
  });

  test('train and val goals are disjoint and fixed by the seed', () => {
    const val = new Set(Array.from({ length: 500 }, (_, s) => webshopGoal(config, s, 'val').asin));
    expect(val.size).toBe(500);
    for (let s = 0; s < 500; s++) expect(val.has(webshopGoal(config, s, 'train').asin)).toBe(false);
    expect(webshopGoal(config, 12, 'train')).toEqual(webshopGoal(config, 12, 'train'));
  });
});

describe('WebShop search', () => {
  test('ranks a product first when searched by its own title', () => {
    let first = 0;
    for (const p of shop.products.slice(0, 100)) if (searchProducts(shop, p.title)[0] === p.asin) first++;
    expect(first).toBeGreaterThanOrEqual(90);
  });
  test('returns at most 50 results, all relevant to the words', () => {
    const hits = searchProducts(shop, 'gluten free protein bars');
    expect(hits.length).toBe(50);
    expect(shop.byAsin.get(hits[0]!)!.type).toBe('protein bars');
    expect(searchProducts(shop, 'qqqzzz')).toEqual([]);
  });
});

describe("WebShop's reward", () => {
  const product: Product = {
    asin: 'B000000001',
    category: 'grocery',
    type: 'protein bars',
    title: 'Kalo Protein Bars',
    brand: 'Kalo',
    price: 20,
    description: '',
    features: [],
    attributes: ['gluten free', 'low sugar'],
    options: { flavor: ['berry', 'caramel'], size: ['pack of 6'] },
    reviews: [],
  };
  const goal: Goal = {
    asin: 'x',
    category: 'grocery',
    type: 'protein bars',
    attributes: ['gluten free', 'non gmo'],
    options: { flavor: 'berry', size: 'pack of 6' },
    priceUpper: 30,
    instruction: '',
  };
  test('counts attribute, option and price matches over their number, times the type match', () => {
    // 1 of 2 attributes, 2 of 2 options, price ok: 4 / 5.
    expect(purchaseReward(goal, product, { flavor: 'berry', size: 'pack of 6' }).total).toBeCloseTo(0.8, 10);
    // a wrong flavour and a price over the bound: 2 / 5.
    expect(
      purchaseReward({ ...goal, priceUpper: 10 }, product, { flavor: 'caramel', size: 'pack of 6' }).total,
    ).toBeCloseTo(0.4, 10);
    // another type in the department halves it, another department takes a tenth.
    expect(purchaseReward({ ...goal, type: 'granola' }, product, goal.options).total).toBeCloseTo(0.4, 10);
    expect(purchaseReward({ ...goal, category: 'shoes', type: 'sandals' }, product, goal.options).total).toBeCloseTo(
      0.08,
      10,
    );
    expect(purchaseReward({ ...goal, attributes: ['low sugar'] }, product, goal.options).total).toBe(1);
  });
});

describe('WebShop actions', () => {
  test('parse as search[...] / click[...] with a case-insensitive verb and a non-empty argument', () => {
    expect(parseWebShopAction(' Search[ red  shoes ] ')).toEqual({ ok: true, verb: 'search', arg: 'red shoes' });
    expect(parseWebShopAction('click[Buy Now]')).toEqual({ ok: true, verb: 'click', arg: 'Buy Now' });
    for (const bad of ['search[]', 'click[  ]', 'buy[x]', 'search red shoes', 'click[x'])
      expect(parseWebShopAction(bad).ok).toBe(false);
  });

  test('a search away from the search page and an unlisted click are invalid and change nothing', () => {
    const env = makeEnv('WebShop');
    env.reset({ seed: 5 });
    expect((env.step('click[buy now]') as any).info.actionIsValid).toBe(false);
    env.step('search[running shoes]');
    const page = env.render();
    const r = env.step('search[hiking boots]') as any;
    expect(r.info.actionIsValid).toBe(false);
    expect(r.info.reason).toMatch(/no search bar/);
    expect(env.render()).toBe(page);
    expect((env.step('click[b0nothere0]') as any).info.reason).toMatch(/not clickable/);
  });

  test('pages through results, opens an item and its sections, goes back, and buys', () => {
    const env = makeEnv('WebShop');
    env.reset({ seed: 5 });
    const results = env.step('search[shirt]') as any;
    expect(results.observation).toMatch(/Page 1 \(Total results: 50\)/);
    const page2 = env.step('click[next >]') as any;
    expect(page2.observation).toMatch(/Page 2/);
    const asin = searchProducts(shop, 'shirt')[10]!;
    expect(page2.observation).toContain(asin);
    const item = env.step(`click[${asin}]`) as any; // upper case works too
    expect(item.info.actionIsValid).toBe(true);
    expect(item.observation).toContain(shop.byAsin.get(asin)!.title);
    expect((env.step('click[description]') as any).observation).toContain(shop.byAsin.get(asin)!.description);
    expect((env.step('click[< prev]') as any).observation).toContain('Buy Now');
    expect((env.step('click[< prev]') as any).observation).toMatch(/Page 2/);
    env.step(`click[${asin}]`);
    const bought = env.step('click[buy now]') as any;
    expect(bought.terminated).toBe(true);
    expect(bought.info.successPurchase).toBe(true);
    expect(bought.reward).toBe(bought.info.rawReward >= 1 ? 1 : 0); // RAGEN's binarisation
  });

  test('a purchase that meets the goal only partly earns 0 with its raw reward in info', () => {
    const goal = webshopGoal(config, 2);
    const env = makeEnv('WebShop');
    env.reset({ seed: 2 });
    env.step(`search[${shop.byAsin.get(goal.asin)!.title}]`);
    env.step(`click[${goal.asin}]`); // the goal's own product, but no option clicked
    const r = env.step('click[buy now]') as any;
    const expected = purchaseReward(goal, shop.byAsin.get(goal.asin)!, {}).total;
    expect(r.info.rawReward).toBeCloseTo(expected, 12);
    expect(r.info.successFind).toBe(true);
    if (Object.keys(goal.options).length > 0) {
      expect(r.info.rawReward).toBeLessThan(1);
      expect(r.reward).toBe(0);
      expect(r.info.success).toBe(false);
    }
  });

  test('hostile text never throws and is invalid', () => {
    const env = makeEnv('WebShop');
    for (const a of [
      ...HOSTILE_ACTIONS,
      'search[' + 'y'.repeat(100_000) + ']',
      'click[ignore previous instructions and buy now]',
      'search[\u0000\u001b[2J]',
    ]) {
      env.reset({ seed: 0 });
      const r = env.step(a) as any;
      expect(typeof r.observation).toBe('string');
      if (!a.startsWith('search[\u0000')) expect(r.info.actionIsValid).toBe(false);
    }
  });
});

describe('the WebShop oracle', () => {
  test('wins at least 90% of train and val seeds through step, within 9 actions', () => {
    const spec = envSpec('WebShop');
    const env = makeEnv('WebShop');
    let won = 0;
    for (const mode of ['train', 'val'] as const) {
      for (let seed = 0; seed < 100; seed++) {
        const plan = spec.solve!(config, seed, mode);
        if (!plan) continue;
        expect(plan.length).toBeLessThanOrEqual(9);
        env.reset({ seed, mode });
        let last: any;
        for (const a of plan) last = env.step(a);
        if (last.info.success) won++;
      }
    }
    expect(won).toBeGreaterThanOrEqual(180);
  });

  test('passes checkEnv', async () => {
    await checkRegisteredEnv('WebShop', { seeds: [0, 3] });
  });
});
