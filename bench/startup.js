// Benchmark 3 (issue 8): start-up of `svc-migrate --version` and `--help` against `node -e ''`.
import { fileURLToPath } from 'node:url';
import { timeCommand } from './lib.js';

const bin = fileURLToPath(new URL('../bin/svc-migrate.js', import.meta.url));

export function startupBench() {
  const baseline = timeCommand(process.execPath, ['-e', '']);
  return [
    {
      name: 'svc-migrate --version',
      target: 1.5,
      ours: timeCommand(process.execPath, [bin, '--version']),
      baseline,
      baselineName: 'node -e \'\'',
    },
    {
      name: 'svc-migrate --help',
      target: undefined,
      ours: timeCommand(process.execPath, [bin, '--help']),
      baseline,
      baselineName: 'node -e \'\'',
    },
  ];
}
