import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';
import { sandboxCommand } from '../helpers/sandbox-command.js';
import { json, startScriptedServer } from '../helpers/scripted-server.js';

// The sandbox's fidelity as a user runs it: `svc-migrate sandbox` on loopback, driven by our own
// CLI and by plain HTTP. The rule-by-rule checks are in test/sandbox/conformance.test.ts.

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

async function sandboxProcess(args: string[]) {
  return (await sandboxCommand(args)).info;
}

describe('svc-migrate sandbox, as the service', () => {
  it('start answers pending; an unknown repository and an unknown organization each get a message that fits', async () => {
    const info = await sandboxProcess(['--export-seconds', '0', '--export-seconds-per-repo', '0']);
    const env = { SVC_BASE_URL: info.base_url, SVC_TOKEN: info.token, SVC_ORG: info.org };
    const started = await runCli(['start', 'Hello-World', '--json'], { env });
    expect(started.code, started.stderr).toBe(0);
    expect(JSON.parse(started.stdout).state).toBe('pending');

    const unknownRepo = await runCli(['start', 'nope'], { env });
    expect(unknownRepo.code).toBe(5);
    expect(unknownRepo.stderr).toMatch(/rejected the request: 1 repository is not in octo-org: nope\n/);

    const unknownOrg = await runCli(['start', 'Hello-World', '--org', 'no-such-org'], { env });
    expect(unknownOrg.code).toBe(4);
    expect(unknownOrg.stderr).toMatch(/not found: organization no-such-org, or a repository named in the request/);

    const head = await fetch(`${info.base_url}/orgs/octo-org/migrations/${JSON.parse(started.stdout).id}/archive`, {
      method: 'HEAD',
      redirect: 'manual',
      headers: { authorization: `Bearer ${info.token}` },
    });
    expect(head.status).toBe(302);
  });

  it('rate limits: retry-after within the window; deliveries honour availability and send the example of the action', async () => {
    const info = await sandboxProcess(['--rate-limit', '2']);
    const get = () => fetch(`${info.base_url}/orgs/octo-org/migrations`, { headers: { authorization: `Bearer ${info.token}` } });
    await get();
    await get();
    const limited = await get();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(3600);

    const bodies: string[] = [];
    const receiver = createServer((request, response) => {
      let text = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      request.on('end', () => {
        bodies.push(text);
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    stops.push(() => new Promise((resolve) => receiver.close(resolve)));
    const admin = (path: string, body: unknown) =>
      fetch(`${info.base_url}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
    expect((await admin('/_sandbox/hooks', { url, events: ['*'] })).status).toBe(201);
    expect((await admin('/_sandbox/emit', { event: 'installation', action: 'created' })).json.delivered).toEqual([]);
    expect((await admin('/_sandbox/emit', { event: 'public', action: 'opened' })).status).toBe(400);
    expect((await admin('/_sandbox/emit', { event: 'pull_request', action: 'opened' })).json.delivered).toHaveLength(1);
    const opened = readFileSync(new URL('../fixtures/webhooks/pull_request/opened.json', import.meta.url), 'utf8');
    expect(JSON.parse(bodies.at(-1) ?? '')).toEqual(JSON.parse(opened));
  });

  it('a service that answers start with 404 for a repository, or 422 without messages, still gets a message that fits', async () => {
    const service = await startScriptedServer(
      json(404, { message: 'Not Found', documentation_url: 'https://docs.example/start' }),
      // The shape the service has been seen to answer for a repository that does not exist.
      json(422, {
        message: 'Validation Failed',
        errors: [
          { resource: 'Migration', field: 'repositories', index: 0, code: 'invalid_value', value: 'octo-org/gone' },
          { resource: 'Migration', field: 'repositories', index: 1, code: 'invalid_value', value: 'x\u001b]0;pwned\u0007\u001b[2J' },
        ],
        documentation_url: 'https://docs.example/start',
      }),
    );
    stops.push(() => service.close());
    const env = { SVC_BASE_URL: service.url, SVC_TOKEN: 'svc_test', SVC_ORG: 'octo-org' };
    const notFound = await runCli(['start', 'gone'], { env });
    expect(notFound.code).toBe(4);
    expect(notFound.stderr).toMatch(/organization octo-org, or a repository named in the request/);
    const invalid = await runCli(['start', 'gone'], { env });
    expect(invalid.code).toBe(5);
    expect(invalid.stderr).toMatch(/2 repositories are not in octo-org: gone, x\\x1b\]0;pwned\\x07\\x1b\[2J\n/);
    expect(invalid.stderr).not.toMatch(/[\u0007\u001b]/);
  });
});
