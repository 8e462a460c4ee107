#!/usr/bin/env node
import module from 'node:module';

module.enableCompileCache?.();
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
