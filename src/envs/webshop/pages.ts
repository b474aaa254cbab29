// WebShop's pages as its text env shows them: search, results (10 a page), item, item detail, done.
// Follows WebShop's web_agent_site text observation ("[SEP]"-joined) and its clickables, all lowercased.
import type { Catalogue, Product } from './catalogue.js';
import { PAGE_SIZE } from './search.js';

/** The item sub-pages WebShop links from an item page. */
export type DetailSection = 'description' | 'features' | 'reviews';

export interface SearchPage {
  kind: 'search';
}
export interface ResultsPage {
  kind: 'results';
  query: string;
  asins: string[];
  /** 1-based page number. */
  page: number;
}
export interface ItemPage {
  kind: 'item';
  asin: string;
  /** Option dimension -> clicked value. */
  chosen: Record<string, string>;
  back: ResultsPage;
}
export interface DetailPage {
  kind: 'detail';
  section: DetailSection;
  item: ItemPage;
}
export interface DonePage {
  kind: 'done';
  asin: string;
  chosen: Record<string, string>;
  rawReward: number;
}
export type Page = SearchPage | ResultsPage | ItemPage | DetailPage | DonePage;

export const BACK_TO_SEARCH = 'back to search';
export const PREV = '< prev';
export const NEXT = 'next >';
export const BUY_NOW = 'buy now';
const SECTIONS: readonly DetailSection[] = ['description', 'features', 'reviews'];

/** Last page number of a results list (at least 1, so an empty list still has page 1). */
export const lastPage = (r: ResultsPage): number => Math.max(1, Math.ceil(r.asins.length / PAGE_SIZE));

/** The ASINs shown on the current results page. */
export const pageAsins = (r: ResultsPage): string[] => r.asins.slice((r.page - 1) * PAGE_SIZE, r.page * PAGE_SIZE);

/** Whether `search[...]` is allowed (WebShop's `has_search_bar`). */
export const hasSearchBar = (p: Page): boolean => p.kind === 'search';

/** What `click[...]` accepts on this page, lowercased, in the order the page shows them. */
export function clickables(p: Page, c: Catalogue): string[] {
  switch (p.kind) {
    case 'search':
    case 'done':
      return [];
    case 'results': {
      const out = [BACK_TO_SEARCH];
      if (p.page > 1) out.push(PREV);
      if (p.page < lastPage(p)) out.push(NEXT);
      return [...out, ...pageAsins(p).map((a) => a.toLowerCase())];
    }
    case 'item': {
      const product = c.byAsin.get(p.asin)!;
      return [BACK_TO_SEARCH, PREV, ...Object.values(product.options).flat(), ...SECTIONS, BUY_NOW];
    }
    case 'detail':
      return [BACK_TO_SEARCH, PREV];
  }
}

/** The page as WebShop's text observation: "[SEP]"-joined parts after the instruction. */
export function renderPage(p: Page, c: Catalogue, instruction: string): string {
  const head = ['Instruction:', instruction];
  const join = (parts: string[]): string => parts.join(' [SEP] ');
  switch (p.kind) {
    case 'search':
      return join(['WebShop', ...head, 'Search']);
    case 'results': {
      const parts = [...head, 'Back to Search', `Page ${p.page} (Total results: ${p.asins.length})`];
      if (p.page > 1) parts.push('< Prev');
      if (p.page < lastPage(p)) parts.push('Next >');
      if (p.asins.length === 0) parts.push(`No products match "${p.query}"`);
      for (const asin of pageAsins(p)) {
        const product = c.byAsin.get(asin)!;
        parts.push(asin, product.title, `$${product.price.toFixed(2)}`);
      }
      return join(parts);
    }
    case 'item': {
      const product = c.byAsin.get(p.asin)!;
      const parts = [...head, 'Back to Search', '< Prev'];
      for (const [dim, values] of Object.entries(product.options)) parts.push(dim, ...values);
      const chosen = Object.entries(p.chosen);
      if (chosen.length > 0) parts.push(`Selected: ${chosen.map(([k, v]) => `${k} ${v}`).join(', ')}`);
      parts.push(
        product.title,
        `Price: $${product.price.toFixed(2)}`,
        'Rating: N.A.',
        'Description',
        'Features',
        'Reviews',
        'Buy Now',
      );
      return join(parts);
    }
    case 'detail': {
      const product = c.byAsin.get(p.item.asin)!;
      return join([...head, 'Back to Search', '< Prev', ...detailText(product, p.section)]);
    }
    case 'done': {
      const product = c.byAsin.get(p.asin)!;
      const chosen = Object.entries(p.chosen)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      return join([
        'Thank you for shopping with us!',
        `You bought ${product.asin}: ${product.title}${chosen ? ` (${chosen})` : ''}`,
        `Your score (min 0.0, max 1.0): ${p.rawReward.toFixed(2)}`,
      ]);
    }
  }
}

function detailText(product: Product, section: DetailSection): string[] {
  if (section === 'description') return [product.description];
  if (section === 'features') return product.features;
  return product.reviews;
}

/** The actions the agent may take here, as the observation lists them. */
export function availableActions(p: Page, c: Catalogue): string[] {
  const out = hasSearchBar(p) ? ['search[<your query>]'] : [];
  return [...out, ...clickables(p, c).map((x) => `click[${x}]`)];
}
