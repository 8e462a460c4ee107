#!/usr/bin/env node
// The installed command. It runs dist/cli.js, the bundle of src/main.ts that `npm run build` makes
// after tsc (scripts/bundle.js says why a bundle): the package ships the dist/cli*.js files and
// their maps, not tsc's modules.
import { mkdirSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

enableCompileCache();
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Scripts call --version often; answer it without loading the command tree.
  const { VERSION } = await import('../dist/cli-version.js');
  process.stdout.write(`${VERSION}\n`);
} else {
  // Stack traces of --debug point into src/ through the bundle's source maps; reading the maps
  // costs start-up time, so only when asked.
  if (args.includes('--debug') || process.env.SVC_DEBUG) process.setSourceMapsEnabled(true);
  const { main } = await import('../dist/cli.js');
  await main(process);
}

/**
 * Node 22 and later keep compiled code between runs (Node 20 has no compile cache), by default in
 * <tmpdir>/node-compile-cache. Node makes that directory with a recursive mkdir that loops for ever
 * where the file system answers a new directory with ENOENT (TMPDIR=/proc/x: the program hung
 * before it started). So the directory is made here, one level, and the cache stays off where that
 * fails. A NODE_COMPILE_CACHE of the user's Node has already acted on before this runs.
 */
function enableCompileCache() {
  if (!module.enableCompileCache || process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  const dir = join(tmpdir(), 'node-compile-cache');
  try {
    mkdirSync(dir);
  } catch (error) {
    if (error.code !== 'EEXIST') return;
  }
  module.enableCompileCache(dir);
}
