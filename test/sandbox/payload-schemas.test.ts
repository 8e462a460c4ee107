import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript development module without types
import { publishedPairs, schemaProblems } from '../../scripts/webhook-schemas.js';
import { startSandbox } from '../../src/sandbox/server.js';
import { closeOnlyIdleConnections } from '../../src/support/keep-alive.js';
import { CATALOGUE, catalogueWarnings } from '../../src/webhook/catalogue.js';

const OWNER = 'svc_sandbox_owner_classic';
const checkProblems = schemaProblems as (component: string, payload: unknown) => string[];
const PUBLISHED = (publishedPairs() as { event: string; action?: string; component: string }[]).filter((pair) => CATALOGUE.has(pair.event));

async function receiver() {
  const deliveries: { event: string; body: string }[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      deliveries.push({ event: String(request.headers['x-service-event']), body });
      response.writeHead(204).end();
    });
  });
  // The schema checks keep this process busy for seconds under load, the sandbox's deliveries
  // included: a request that arrives meanwhile on a kept-alive connection is served, not reset.
  closeOnlyIdleConnections(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, deliveries, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('what the sandbox sends is valid against GitHub\'s published schema of each event and action', () => {
  it('every catalogue pair emitted, the ping of every kind of hook, and a dispatch', async () => {
    const sandbox = await startSandbox();
    const target = await receiver();
    const admin = (path: string, body: unknown) =>
      fetch(`${sandbox.baseUrl}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    try {
      // One hook of each kind: every event reaches the kinds its availability names.
      for (const kind of ['app', 'organization', 'repository', 'enterprise', 'marketplace', 'sponsors']) {
        expect((await admin('/_sandbox/hooks', { url: target.url, events: ['*'], target: kind, repository: 'widgets' })).status).toBe(201);
      }
      const failures: string[] = [];
      const check = (name: string, component: string, event: string, body: string) => {
        const payload = JSON.parse(body) as Record<string, unknown>;
        const problems = [...checkProblems(component, payload), ...catalogueWarnings(event, payload)];
        if (problems.length > 0) failures.push(`${name}: ${problems.slice(0, 3).join('; ')}`);
      };
      const pings = target.deliveries.splice(0);
      // Ping is available to repository, organization, app, enterprise and marketplace hooks.
      expect(pings.map((delivery) => delivery.event)).toEqual(['ping', 'ping', 'ping', 'ping', 'ping']);
      pings.forEach((ping, index) => check(`ping of hook ${index + 1}`, 'webhook-ping', 'ping', ping.body));
      for (const { event, action, component } of PUBLISHED) {
        const answer = await admin('/_sandbox/emit', action === undefined ? { event } : { event, action });
        const name = action === undefined ? event : `${event}.${action}`;
        expect(answer.json.delivered.length, name).toBeGreaterThan(0);
        const sent = target.deliveries.splice(0);
        expect(new Set(sent.map((delivery) => delivery.body)).size, name).toBe(1);
        check(name, component, event, sent[0]!.body);
      }
      const dispatched = await fetch(`${sandbox.baseUrl}/repos/octo-org/widgets/dispatches`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OWNER}` },
        body: JSON.stringify({ event_type: 'deploy', client_payload: { environment: 'production' } }),
      });
      expect(dispatched.status).toBe(204);
      const [dispatch] = target.deliveries.splice(0);
      expect(JSON.parse(dispatch!.body)).toMatchObject({ action: 'deploy', organization: { login: 'octo-org', hooks_url: expect.any(String) } });
      check('dispatch', 'webhook-repository-dispatch-sample', 'repository_dispatch', dispatch!.body);
      expect(failures).toEqual([]);
    } finally {
      await target.close();
      await sandbox.close();
    }
  }, 120_000);
});
