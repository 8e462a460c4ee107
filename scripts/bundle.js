// Part of `npm run build`, after tsc: bundles the program that bin/svc-migrate.js runs into
// dist/cli.js, with commander and chalk, which every command loads. Each ES module is resolved, read
// and linked on its own: some 80 modules before the first request. `list --json` takes 158 ms
// bundled and 202 ms unbundled on Node 20 (132 and 166 ms on Node 22, 182 and 239 ms on Node 24;
// docs/benchmarks.md, "Tuning that stays"); test/e2e/cli.test.ts fails if commands stop loading from
// the bundle. What is loaded only where used (undici, ora, inquirer, conf, cli-table3) stays
// in node_modules, where `npm update` reaches its fixes; the sandbox and the API client stay in files
// of their own (dist/cli-sandbox.js, dist/cli-chunk-*.js) loaded on first use. dist/cli-version.js
// answers a lone --version (bin/svc-migrate.js); dist/cli-hash-worker.js is the hashing thread
// (core/hasher.ts). Each file has a source map back to src/ (through
// tsc's maps), which bin/svc-migrate.js turns on for --debug. Only these cli* files are published;
// the rest of dist/ (tsc's output) is what the benchmarks and scripts import.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const BUNDLED = new Set(['commander', 'chalk']);
const { dependencies } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

for (const name of readdirSync(dist)) if (/^cli[.-]/.test(name)) rmSync(join(dist, name));

const { metafile } = await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'dist/main.js', out: 'cli' },
    // The sandbox as one file of its own, loaded only by the commands that use it.
    { in: 'dist/sandbox/server.js', out: 'cli-sandbox' },
    { in: 'dist/support/version.js', out: 'cli-version' },
    // The hashing thread's module, which core/hasher.ts starts by this name.
    { in: 'dist/core/hash-worker.js', out: 'cli-hash-worker' },
  ],
  outdir: 'dist',
  chunkNames: 'cli-chunk-[hash]',
  bundle: true,
  splitting: true,
  sourcemap: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  external: Object.keys(dependencies).filter((name) => !BUNDLED.has(name)),
  // commander is CommonJS: its require() of node's modules needs a require in an ES module.
  banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
  logLevel: 'warning',
  metafile: true,
});

// Start-up stays lean only while cli.js and what it imports statically hold none of the sandbox:
// the bundle would hide a static import that tsc's output made visible (test/e2e/cli.test.ts).
const loadedAtStart = new Set();
const visit = (output) => {
  if (loadedAtStart.has(output)) return;
  loadedAtStart.add(output);
  for (const { path, kind, external } of metafile.outputs[output].imports) if (kind === 'import-statement' && !external) visit(path);
};
visit('dist/cli.js');
const sandboxAtStart = [...loadedAtStart].flatMap((output) => Object.keys(metafile.outputs[output].inputs)).filter((input) => input.startsWith('dist/sandbox/'));
if (sandboxAtStart.length > 0) throw new Error(`dist/cli.js loads the sandbox at start-up: ${sandboxAtStart.join(', ')}`);
