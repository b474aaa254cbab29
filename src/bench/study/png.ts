// SVG figures to PNG with headless chromium (Debian's, driven by playwright-core as the dashboard's browser tests do):
// each SVG is set as a page's content at its own size and screenshotted at 2x for sharp text. playwright-core is a dev
// dependency, imported when figures are drawn, so that an installed package (no dev dependencies) loads without it.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../../util/index.js';
import type { Figure } from './figures.js';

/** The chromium binary: $RAGEN_CHROMIUM, else Debian's. */
export function chromiumPath(): string {
  return process.env.RAGEN_CHROMIUM ?? '/usr/bin/chromium';
}

/** Write `<dir>/<figure>.png` for each figure; returns the files. */
export async function writePngs(figures: Figure[], dir: string, opts: { scale?: number } = {}): Promise<string[]> {
  const exe = chromiumPath();
  if (!existsSync(exe))
    throw new UsageError(
      `Rendering the figures needs chromium, and ${exe} does not exist. Install it (apt-get install chromium) or set RAGEN_CHROMIUM to a chromium binary.`,
    );
  const { chromium } = await loadPlaywright();
  mkdirSync(dir, { recursive: true });
  const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox'] });
  try {
    const files: string[] = [];
    for (const fig of figures) {
      const page = await browser.newPage({
        viewport: { width: fig.width, height: fig.height },
        deviceScaleFactor: opts.scale ?? 2,
      });
      await page.setContent(`<!doctype html><html><body style="margin:0;background:#fff">${fig.svg}</body></html>`);
      const file = join(dir, `${fig.name}.png`);
      await page.screenshot({ path: file, clip: { x: 0, y: 0, width: fig.width, height: fig.height } });
      await page.close();
      files.push(file);
    }
    return files;
  } finally {
    await browser.close();
  }
}

async function loadPlaywright(): Promise<typeof import('playwright-core')> {
  try {
    return await import('playwright-core');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
    throw new UsageError(
      'Rendering the figures needs the package playwright-core (a dev dependency of ragen-ts); install it with `npm install playwright-core`.',
    );
  }
}
