#!/usr/bin/env node
// Builds the dashboard page (`npm run build`): dashboard-ui/src/main.ts and its pages -> build/dashboard/ (ES modules,
// CSS, the play page as its own chunk) with esbuild, plus dashboard-ui/index.html. The play page bundles the model,
// tensor,
// tokenizer, agent and env code for the browser; their Node-only imports (node:fs ...) resolve to a module that throws
// when called, since the browser path never reads files.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'build', 'dashboard');
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) rmSync(join(out, f), { recursive: true, force: true });

/**
 * node:* imports, and the Node-only packages the library uses on paths the browser never takes (progress bars, Hub
 * downloads, W&B, figures), become a module with the same export names, each a function that throws when called.
 */
const NODE_ONLY =
  /^(node:.*|cli-progress|@huggingface\/hub|@wandb\/sdk|playwright-core|@modelcontextprotocol\/sdk\/.*)$/;
const nodeStub = {
  name: 'node-stub',
  setup(b) {
    b.onResolve({ filter: NODE_ONLY }, (args) => ({ path: args.path, namespace: 'node-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'node-stub' }, async (args) => {
      // The real module's export names, each a function that throws (constants become undefined-safe stubs too).
      const names = Object.keys(await import(args.path).catch(() => ({}))).filter(
        (n) => n !== 'default' && /^[A-Za-z_$][\w$]*$/.test(n),
      );
      const fail = `(name) => function () { throw new Error(${JSON.stringify(args.path)} + '.' + name + ' is not available in the browser'); }`;
      return {
        contents: `const fail = ${fail};\nexport default new Proxy({}, { get: (_t, n) => fail(String(n)) });\n${names.map((n) => `export const ${n} = fail(${JSON.stringify(n)});`).join('\n')}\n`,
        loader: 'js',
      };
    });
  },
};

await build({
  entryPoints: { main: join(root, 'dashboard-ui', 'src', 'main.ts') },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  outdir: out,
  minify: true,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [nodeStub],
});
copyFileSync(join(root, 'dashboard-ui', 'index.html'), join(out, 'index.html'));
console.log(`dashboard: built ${readdirSync(out).length} files in ${out}`);
