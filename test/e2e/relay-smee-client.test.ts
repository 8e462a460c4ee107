import { afterEach, describe, expect, it } from 'vitest';
import { SmeeClient } from 'smee-client';
import { listen } from '../helpers/listener.js';
import { channelName, untilListeners } from '../helpers/relay.js';
import { testSandbox } from '../helpers/sandbox.js';

// The sandbox's relay read by the real smee-client from npm, as a developer runs `smee -u <channel>
// -t <app>`: it must take the sandbox's channels (createChannel) and frames (ready, ping, unnamed
// events whose data holds the headers, body, query and timestamp), and forward what a sandbox hook
// delivered so that the receiver verifies it. The sandbox's bodies are JSON.stringify's, so
// smee-client's JSON.stringify of the relayed body gives back the bytes that were signed.

const SECRET = 'relay-smee-secret';
const clients: SmeeClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.stop()));
});

/** smee-client's log, kept to say what it did when a test fails. */
function quietLogger() {
  const said: string[] = [];
  const keep = (...parts: unknown[]) => said.push(parts.map(String).join(' '));
  return { said, logger: { info: keep, error: keep } };
}

describe('smee-client (npm) against the sandbox relay', () => {
  it('createChannel gets a channel of the sandbox\'s relay from its /relay/new', async () => {
    // smee-client reaches the relay through undici with its own dispatcher: plain HTTP, as no CA of ours reaches it.
    const { sandbox, fetch } = await testSandbox({ tls: false });
    const channel = await SmeeClient.createChannel({ newChannelUrl: `${sandbox.baseUrl}/relay/new` });
    expect(channel).toMatch(new RegExp(`^${sandbox.baseUrl}/relay/[A-Za-z0-9_-]{1,128}$`));
    // A new one each time, and one that can be read (the relay counts the reader).
    expect(await SmeeClient.createChannel({ newChannelUrl: `${sandbox.baseUrl}/relay/new` })).not.toBe(channel);
    const { logger } = quietLogger();
    const client = new SmeeClient({ source: channel, target: 'http://127.0.0.1:9/', logger, forward: false });
    clients.push(client);
    await client.start();
    await untilListeners(fetch, sandbox.baseUrl, channel, 1);
    expect(channelName(channel)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('receives what a sandbox hook delivers to a channel and forwards it to `webhook listen --secret`, which verifies it', async () => {
    const { sandbox, fetch } = await testSandbox({ tls: false });
    const channel = await SmeeClient.createChannel({ newChannelUrl: `${sandbox.baseUrl}/relay/new` });
    const receiver = await listen(['--secret', SECRET, '--max-deliveries', '3', '--path', '/hook'], { spawn: true });
    const { said, logger } = quietLogger();
    const client = new SmeeClient({ source: channel, target: `${receiver.url}?from=smee`, logger });
    clients.push(client);
    await client.start();
    await untilListeners(fetch, sandbox.baseUrl, channel, 1);

    const created = await sandbox.hooks.create({ url: channel, secret: SECRET, contentType: 'json', events: ['*'] });
    expect(created.ping?.status, 'the relay took the ping').toBe(200);
    const pushed = await sandbox.hooks.emit({ event: 'push' });
    const opened = await sandbox.hooks.emit({ event: 'issues', action: 'opened' });
    expect([...pushed.delivered, ...opened.delivered].map((report) => report.status)).toEqual([200, 200]);

    const ended = await Promise.race([receiver.exited, receiver.until(() => /POST .* - 5\d\d/.test(said.join('\n'))).then(() => -1)]);
    expect(ended, `${receiver.stderr()}\nsmee-client: ${said.join('\n')}`).toBe(0);
    // smee-client posts each event as it comes, without waiting for the post before: they may arrive in any order.
    const byId = (a: unknown[], b: unknown[]) => String(a[2]).localeCompare(String(b[2]));
    expect(receiver.lines.map((line) => [line.event, line.action, line.delivery]).sort(byId)).toEqual(
      [
        ['ping', null, created.ping?.delivery],
        ['push', null, pushed.delivered[0]?.delivery],
        ['issues', 'opened', opened.delivered[0]?.delivery],
      ].sort(byId),
    );
    for (const line of receiver.lines) {
      expect(line, `${line.event}: ${JSON.stringify(line.warnings)}`).toMatchObject({ verified: true, signature: { algorithm: 'sha256' }, duplicate: false });
      // smee-client posted it to the receiver directly: not a delivery read from a relay by us.
      expect(line.relay ?? null).toBeNull();
      expect(line.headers['x-service-hook-id']).toBe(String(created.hook.id));
    }
    expect(receiver.stderr()).toMatch(/received 3, verified 3, rejected 0/);
    expect(said.join('\n')).toMatch(/POST .*\/hook\?from=smee - 200/);
  }, 30_000);
});
