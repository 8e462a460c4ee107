// Helpers shared by the benchmarks: run a command several times and keep the median.
import { spawnSync } from 'node:child_process';

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Median wall time in ms of `command args` over `runs` runs, after one warm-up. */
export function timeCommand(command, args, { runs = 15, env = process.env } = {}) {
  const once = () => {
    const started = process.hrtime.bigint();
    const result = spawnSync(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  once();
  return median(Array.from({ length: runs }, once));
}
