import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listen } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

const TOKEN = 'svc_SECRET_token_that_must_never_show_9f3a';
const seed = {
  users: [{ login: 'ada', id: 1 }],
  organizations: [{ login: 'acme', id: 2, owners: ['ada'], members: [], repositories: [{ name: 'widgets' }, { name: 'docs.site' }] }],
  tokens: [{ token: TOKEN, kind: 'classic', user: 'ada', label: 'owner' }],
};

describe('credentials never leak', () => {
  it('keeps the token out of stdout, stderr (--debug too), saved files and errors, and off other origins', async () => {
    const { sandbox, env: reach } = await testSandbox({ seed: seed as never });
    const env = { ...reach, SVC_TOKEN: TOKEN, SVC_ORG: 'acme', SVC_DEBUG: '1' };
    const dir = mkdtempSync(join(tmpdir(), 'svc-sec-'));
    const output = join(dir, 'a.tar.gz');
    const runs = [
      await runCli(['export', 'widgets', 'docs.site', '--lock', '--unlock', '--delete-archive', '--yes', '-o', output, '--interval', '0.1', '--json'], { env }),
      await runCli(['list', '--all'], { env }),
      await runCli(['status', '999'], { env }),
      await runCli(['status', '999', '--json'], { env }),
      await runCli(['unlock', '1000', '../widgets'], { env }),
      await runCli(['download', '999', '-o', join(dir, 'b.tar.gz')], { env }),
      await runCli(['auth', 'status'], { env }),
      await runCli(['list'], { env: { ...env, SVC_BASE_URL: 'http://127.0.0.1:9' } }),
    ];
    expect(runs[0]?.code, runs[0]?.stderr).toBe(0);
    expect(runs[0]?.stderr).toMatch(/authorization: Bearer \[REDACTED\]/);
    expect(runs[0]?.stderr).toMatch(/signature=\[REDACTED\]/);
    for (const run of runs) expect(`${run.stdout}\n${run.stderr}`).not.toContain(TOKEN);
    for (const name of readdirSync(dir)) expect(readFileSync(join(dir, name)).includes(TOKEN), name).toBe(false);

    // Only the API's origin ever saw the token; the storage origin never did.
    expect(sandbox.requests.filter((r) => r.origin === 'storage').length).toBeGreaterThan(0);
    for (const request of sandbox.requests) {
      if (request.origin === 'storage') expect(request.headers.authorization).toBeUndefined();
    }
    // A repository name cannot change the request path.
    expect(sandbox.requests.some((r) => r.url === '/orgs/acme/migrations/1000/repos/..%2Fwidgets/lock')).toBe(true);
    expect(sandbox.requests.some((r) => r.url.includes('/repos/../'))).toBe(false);
  }, 60_000);
});

describe('receiver defaults', () => {
  it('binds to 127.0.0.1 unless --host says otherwise', async () => {
    const listener = await listen([]);
    expect(new URL(listener.url).hostname).toBe('127.0.0.1');
    await listener.stop();
  });
});
