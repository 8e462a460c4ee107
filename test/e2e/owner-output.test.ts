import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// Issue #35 (3, 5, 10): what an owner reads in tables, lists, 422s and on a terminal, as gh users expect.

async function started(env: Record<string, string>, repos: string[], extra: string[] = []): Promise<Migration> {
  const result = await runCli(['start', ...repos, '--json', ...extra], { env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Migration;
}

describe('lock requested, not "locked"', () => {
  it('after unlock --all, status and list say the lock was requested, never that it is locked', async () => {
    const { env } = await testSandbox();
    const { id } = await started(env, ['widgets'], ['--lock', '--wait', '--interval', '0.1']);
    const unlocked = await runCli(['unlock', String(id), '--all'], { env });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    const status = await runCli(['status', String(id)], { env });
    expect(status.stdout).toMatch(/^ {2}lock requested {2}yes$/m);
    expect(status.stdout).not.toMatch(/locked/);
    const json = JSON.parse((await runCli(['status', String(id), '--json'], { env })).stdout) as Migration;
    expect(json.lock_repositories).toBe(true);
  });
});

describe('list on a terminal', () => {
  it('names the column LOCK REQUESTED', async () => {
    const { env } = await testSandbox();
    await started(env, ['widgets'], ['--lock']);
    const list = await runCli(['list', '--no-color'], { env, terminal: { columns: 120 } });
    expect(list.stdout).toMatch(/ID.*STATE.*REPOSITORIES.*LOCK REQUESTED.*CREATED.*UPDATED/);
  });
});
