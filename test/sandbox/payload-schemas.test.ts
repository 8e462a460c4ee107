import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript development module without types
import { publishedPairs, schemaProblems } from '../../scripts/webhook-schemas.js';
import { startSandbox } from '../../src/sandbox/server.js';
import { CATALOGUE, catalogueWarnings } from '../../src/webhook/catalogue.js';
import { hookTarget } from '../helpers/hook-target.js';

const OWNER = 'svc_sandbox_owner_classic';
const checkProblems = schemaProblems as (component: string, payload: unknown) => string[];
const PUBLISHED = (publishedPairs() as { event: string; action?: string; component: string }[]).filter((pair) => CATALOGUE.has(pair.event));

describe('what the sandbox sends is valid against GitHub\'s published schema of each event and action', () => {
  it('every catalogue pair emitted, the ping of every kind of hook, and a dispatch', async () => {
    const sandbox = await startSandbox();
    const target = await hookTarget();
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
      expect(pings.map((delivery) => delivery.headers['x-service-event'])).toEqual(['ping', 'ping', 'ping', 'ping', 'ping']);
      pings.forEach((ping, index) => check(`ping of hook ${index + 1}`, 'webhook-ping', 'ping', ping.body.toString()));
      for (const { event, action, component } of PUBLISHED) {
        const answer = await admin('/_sandbox/emit', action === undefined ? { event } : { event, action });
        const name = action === undefined ? event : `${event}.${action}`;
        expect(answer.json.delivered.length, name).toBeGreaterThan(0);
        const sent = target.deliveries.splice(0);
        expect(new Set(sent.map((delivery) => delivery.body.toString())).size, name).toBe(1);
        check(name, component, event, sent[0]!.body.toString());
      }
      const dispatched = await fetch(`${sandbox.baseUrl}/repos/octo-org/widgets/dispatches`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OWNER}` },
        body: JSON.stringify({ event_type: 'deploy', client_payload: { environment: 'production' } }),
      });
      expect(dispatched.status).toBe(204);
      const [dispatch] = target.deliveries.splice(0);
      expect(JSON.parse(dispatch!.body.toString())).toMatchObject({ action: 'deploy', organization: { login: 'octo-org', hooks_url: expect.any(String) } });
      check('dispatch', 'webhook-repository-dispatch-sample', 'repository_dispatch', dispatch!.body.toString());
      expect(failures).toEqual([]);
    } finally {
      await target.close();
      await sandbox.close();
    }
  }, 120_000);
});
