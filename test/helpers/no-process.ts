// The quick project (`npm run test:quick`) promises tests that start no process: while its files run,
// node:child_process refuses to start one, so a test that does fails there and is moved to a folder
// of the behaviour project. Restored after each file: a worker may run behaviour files next.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { afterAll } from 'vitest';

const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
const STARTERS = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'];
const originals = new Map(STARTERS.map((name) => [name, childProcess[name]]));

// At the top, not in a hook: a file may start a process while vitest collects its tests.
for (const name of STARTERS) {
  childProcess[name] = () => {
    throw new Error(`a test of the quick project started a process (${name}): it belongs in test/e2e, test/integrity or test/reliability`);
  };
}
syncBuiltinESMExports();

afterAll(() => {
  for (const [name, original] of originals) childProcess[name] = original;
  syncBuiltinESMExports();
});
