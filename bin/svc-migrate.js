#!/usr/bin/env node
import module from 'node:module';

module.enableCompileCache?.();
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Scripts call --version often; answer it without loading the command tree.
  const { VERSION } = await import('../dist/version.js');
  process.stdout.write(`${VERSION}\n`);
} else {
  const { main } = await import('../dist/cli.js');
  await main(process);
}
