/**
 * What to add to the name of a test that is skipped unless `runs`: why it did not run, so a run's
 * list of tests says what was left out. Empty when it runs.
 */
export function unless(runs: boolean, why: string): string {
  return runs ? '' : ` (skipped: ${why})`;
}
