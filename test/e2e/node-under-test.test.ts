import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// .ci/run runs the suite on each Node the project is tested on (README: 20, 22 and 24), with that
// Node first on PATH, and names its major version in SVC_CI_NODE. The suite must then really run
// on it: vitest's workers, the built binary the tests spawn (process.execPath), and a `node` found
// on PATH (npm's scripts, git hooks). Outside CI there is nothing to compare with.
const expected = process.env.SVC_CI_NODE;
const major = (version: string) => version.trim().replace(/^v/, '').split('.')[0];

describe.skipIf(!expected)(`the Node under test${expected ? ` (${expected})` : ' (skipped: SVC_CI_NODE is set by .ci/run only)'}`, () => {
  it('runs the tests, the binaries they spawn and the node on PATH', () => {
    expect(major(process.version)).toBe(expected);
    expect(major(execFileSync(process.execPath, ['-p', 'process.version'], { encoding: 'utf8' }))).toBe(expected);
    expect(major(execFileSync('node', ['-p', 'process.version'], { encoding: 'utf8' }))).toBe(expected);
  });
});
