import { describe, expect, it } from 'vitest';
import { eventActions } from '../../src/webhook/catalogue.js';
import { DEFAULT_KEEP } from '../../src/webhook/inspector/log.js';
import { DEFAULT_MAX_CONNECTIONS } from '../../src/webhook/receiver.js';
import { jsonRefusal, NO_PROMPT, options, refused } from '../helpers/command-options.js';

// The options of the webhook commands, read and checked through the seam of src/context.ts: a flag
// that could never work is a usage error at once, not a failure at each delivery, and nothing is
// bound, read, sent or asked for.

const EMPTY_SECRET_HINT = 'pass the webhook\'s secret, or leave --secret out to accept unverified deliveries';

describe('webhook listen', () => {
  it('defaults: 127.0.0.1:8787, path /, deduplicated, no secret, no filter, no forward', async () => {
    expect(await options(['webhook', 'listen'])).toEqual({
      port: 8787,
      host: '127.0.0.1',
      path: '/',
      dedupe: true,
      forwardQueue: 10_000,
      maxConnections: DEFAULT_MAX_CONNECTIONS,
      secrets: [],
      filters: [],
    });
  });

  it('takes each flag as given', async () => {
    const args = ['--port', '0', '--host', '0.0.0.0', '--path', '/hooks', '--no-dedupe', '--forward-queue', '5', '--max-connections', '10', '--max-deliveries', '3', '--save', 'deliveries'];
    expect(await options(['webhook', 'listen', ...args])).toMatchObject({
      port: 0,
      host: '0.0.0.0',
      path: '/hooks',
      dedupe: false,
      forwardQueue: 5,
      maxConnections: 10,
      maxDeliveries: 3,
      save: 'deliveries',
    });
  });

  it.each([
    [['--port', '99999'], /a port is a whole number from 0 to 65535 \(0 picks a free one\), not "99999"/],
    [['--port', 'http'], /a port is a whole number from 0 to 65535/],
    [['--max-deliveries', '0'], /expected a positive integer, not "0"/],
    [['--forward-queue', '-1'], /expected a positive integer|unknown option/],
    [['--max-connections', 'many'], /expected a positive integer, not "many"/],
    [['--path', 'hooks'], '--path must be a path such as / or /hooks, not "hooks"'],
    [['--path', '/hooks?x=1'], '--path must be a path such as / or /hooks, not "/hooks?x=1"'],
    [['--path', '/a b'], '--path must be a path such as / or /hooks, not "/a b"'],
    [['--host', ''], '--host is empty'],
    [['--host', '  '], '--host is empty'],
    // `--save "$UNSET"`: deliveries answered 2xx and never saved.
    [['--save', ''], '--save is empty'],
  ])('refuses %j', async (args, message) => {
    await refused(['webhook', 'listen', ...args], message);
  });

  it('--secret: repeated for a rotation, each checked; SVC_WEBHOOK_SECRET beside them', async () => {
    expect(await options(['webhook', 'listen', '--secret', 'old', '--secret', 'new'])).toMatchObject({ secrets: ['old', 'new'] });
    expect(await options(['webhook', 'listen', '--secret', 'new'], { env: { SVC_WEBHOOK_SECRET: 'from-env' } })).toMatchObject({ secrets: ['new'], envSecret: 'from-env' });
    // An empty variable is none.
    expect(await options(['webhook', 'listen'], { env: { SVC_WEBHOOK_SECRET: '' } })).not.toHaveProperty('envSecret');
    await refused(['webhook', 'listen', '--secret', 'ok', '--secret', ''], '--secret is empty', EMPTY_SECRET_HINT);
    await refused(['webhook', 'listen', '--secret', ' \t'], '--secret is only whitespace', EMPTY_SECRET_HINT);
    await refused(['webhook', 'listen'], 'SVC_WEBHOOK_SECRET is only whitespace', 'set SVC_WEBHOOK_SECRET to the webhook\'s secret, or unset it', {
      env: { SVC_WEBHOOK_SECRET: '  ' },
    });
  });

  it('--secret with no value: asked for on a terminal, a usage error without one or with --no-input', async () => {
    expect(await options(['webhook', 'listen', '--secret'], { stdinIsTTY: true })).toMatchObject({ secrets: [true] });
    expect(await options(['webhook', 'listen', '--secret', 'a', '--secret'], { stdinIsTTY: true })).toMatchObject({ secrets: ['a', true] });
    const hint = `pass --secret <value> or SVC_WEBHOOK_SECRET ${NO_PROMPT}`;
    await refused(['webhook', 'listen', '--port', '0', '--secret'], 'a webhook secret is required', hint);
    await refused(['webhook', 'listen', '--secret', '--no-input'], 'a webhook secret is required', hint, { stdinIsTTY: true });
  });

  it('--events: events and event.action pairs of the catalogue', async () => {
    expect(await options(['webhook', 'listen', '--events', 'push, issues.opened,repository_dispatch.deploy.prod'])).toMatchObject({
      filters: [{ event: 'push' }, { event: 'issues', action: 'opened' }, { event: 'repository_dispatch', action: 'deploy.prod' }],
    });
    const catalogue = 'run `svc-migrate webhook events` for the catalogue';
    await refused(['webhook', 'listen', '--events', 'pusj'], '--events: unknown event "pusj"; did you mean "push"?', catalogue);
    await refused(['webhook', 'listen', '--events', 'push.created'], '--events: "push" has no actions, so "push.created" never matches', catalogue);
    await refused(['webhook', 'listen', '--events', ' , '], '--events lists no events', 'name events such as push,issues.opened, or leave --events out for all');
  });

  it('--forward-to: the short forms, a timeout to the millisecond (10 s unless given, the service\'s own), 8 forwards at once, credentials never shown', async () => {
    expect(await options(['webhook', 'listen', '--forward-to', '3000/webhooks'])).toMatchObject({
      forward: { target: 'http://localhost:3000/webhooks', shown: 'http://localhost:3000/webhooks', timeoutMs: 10_000, concurrency: 8, headers: [], retries: 0 },
    });
    const secret = await options(['webhook', 'listen', '--forward-to', 'http://alice:s3cr3t@localhost:3000/p', '--forward-timeout', '2.5']);
    expect(secret).toMatchObject({ forward: { target: 'http://alice:s3cr3t@localhost:3000/p', timeoutMs: 2500 } });
    expect((secret as { forward: { shown: string } }).forward.shown).not.toContain('s3cr3t');
    await refused(['webhook', 'listen', '--forward-timeout', '1.0001'], /to the millisecond/);
  });

  it('--forward-concurrency: 1 to 64, and only with --forward-to', async () => {
    const forward = ['webhook', 'listen', '--forward-to', '3000'];
    expect(await options([...forward, '--forward-concurrency', '1'])).toMatchObject({ forward: { concurrency: 1 } });
    expect(await options([...forward, '--forward-concurrency', '64'])).toMatchObject({ forward: { concurrency: 64 } });
    for (const given of ['0', '65', '-1', '2.5', 'many', '']) {
      await refused([...forward, '--forward-concurrency', given], new RegExp(`expected a number of forwards at once from 1 to 64, not "${given.replace('.', '\\.')}"|option '--forward-concurrency <n>' argument missing`));
    }
    await refused(['webhook', 'listen', '--forward-concurrency', '4'], '--forward-concurrency needs --forward-to', 'add --forward-to with your app\'s port and path, or leave it out');
  });

  it('--forward-header and --forward-retries: each needs --forward-to, and is checked', async () => {
    const forward = ['webhook', 'listen', '--forward-to', '3000'];
    expect(await options([...forward, '--forward-header', 'X-Env: dev', '--forward-header', 'X-Team:web', '--forward-retries', '3'])).toMatchObject({
      forward: { headers: [{ name: 'X-Env', value: 'dev' }, { name: 'X-Team', value: 'web' }], retries: 3 },
    });
    const needs = 'add --forward-to with your app\'s port and path, or leave it out';
    await refused(['webhook', 'listen', '--forward-header', 'X-Env: dev'], '--forward-header needs --forward-to', needs);
    await refused(['webhook', 'listen', '--forward-retries', '2'], '--forward-retries needs --forward-to', needs);
    await refused([...forward, '--forward-retries', '21'], /expected a number of retries from 0 to 20, not "21"/);
    await refused([...forward, '--forward-header', 'Bearer-only'], 'a --forward-header value has no colon: it is not a header field');
    await refused([...forward, '--forward-header', 'X Env: dev'], /"X Env" cannot be a field name/);
    await refused([...forward, '--forward-header', 'X-Env:'], '--forward-header "X-Env: " has no value', /give X-Env a value/);
    await refused([...forward, '--forward-header', 'X-Env: a\u0085b'], /holds a control character, which no header value can/);
    await refused([...forward, '--forward-header', 'Connection: close'], /a field of the connection/);
    await refused([...forward, '--forward-header', 'X-Service-Event: push'], /would replace the delivery's own X-Service-Event/);
    const credentials = await refused(['webhook', 'listen', '--forward-to', 'http://u:pw@localhost:3000/', '--forward-header', 'Authorization: Bearer s3cr3t-value'],
      /would replace the user and password of --forward-to/);
    expect(credentials.stderr).not.toContain('s3cr3t-value');
  });

  it.each([
    ['Host: example.test', /--forward-header "Host: example.test" names Host, a field of the connection/],
    ['Content-Length: 5', /names Content-Length, a field of the connection/],
    ['Transfer-Encoding: chunked', /names Transfer-Encoding, a field of the connection/],
    ['connection: close', /names connection, a field of the connection/],
    ['X-Hub-Signature-256: sha256=00', /would replace the delivery's own X-Hub-Signature-256/],
    ['X-Service-Event: push', /would replace the delivery's own X-Service-Event/],
    ['Content-Type: text/plain', /would replace the delivery's own Content-Type/],
    ['User-Agent: mine', /would replace the delivery's own User-Agent/],
    ['Bearer s3cr3t-value', /a --forward-header value has no colon/],
    ['X Token: s3cr3t-value', /--forward-header "X Token: …" is not a header field/],
    ['X-Token:', /--forward-header "X-Token: \[REDACTED\]" has no value/],
    ['X-Token: s3cr3t-value\r\nX-Evil: 1', /--forward-header "X-Token: \[REDACTED\]" holds a control character/],
  ])('--forward-header %j is a usage error naming the flag, showing no credential', async (header, message) => {
    const result = await refused(['webhook', 'listen', '--forward-to', '3000', '--forward-header', 'X-Ok: 1', '--forward-header', header], message, /\nhint: /);
    expect(result.stderr).not.toContain('s3cr3t-value');
  });

  it('--inspect: a free port unless given, and --inspect-keep only with it', async () => {
    expect(await options(['webhook', 'listen', '--inspect'])).toMatchObject({ inspect: { port: 0, keep: DEFAULT_KEEP } });
    expect(await options(['webhook', 'listen', '--inspect', '9000', '--inspect-keep', '10'])).toMatchObject({ inspect: { port: 9000, keep: 10 } });
    await refused(['webhook', 'listen', '--inspect-keep', '10'], '--inspect-keep is used only with --inspect', 'add --inspect to serve the page, or leave --inspect-keep out');
    await refused(['webhook', 'listen', '--inspect', '70000'], /a port is a whole number from 0 to 65535/);
  });

  it('--port 99999 --json: one JSON error line', async () => {
    expect(await jsonRefusal(['webhook', 'listen', '--port', '99999', '--json'])).toMatch(/0 to 65535/);
  });
});

/** The three flags that name where deliveries go (docs/cli.md#where-deliveries-go), each on its command. */
const TARGET_FLAGS: Record<string, (url: string) => string[]> = {
  'send --url': (url) => ['webhook', 'send', '--url', url, '--event', 'ping'],
  'replay --url': (url) => ['webhook', 'replay', 'deliveries', '--url', url],
  'listen --forward-to': (url) => ['webhook', 'listen', '--forward-to', url],
  'inspect --forward-to': (url) => ['webhook', 'inspect', 'deliveries', '--forward-to', url],
};

describe.each(Object.keys(TARGET_FLAGS))('%s: one rule for where deliveries go', (name) => {
  const args = TARGET_FLAGS[name] as (url: string) => string[];
  const flag = name.split(' ')[1] as string;
  const target = (read: unknown) => {
    const given = read as { url?: string; forward?: { target: string } };
    return given.url ?? given.forward?.target;
  };

  it.each([
    ['8787', 'http://localhost:8787/'],
    ['3000/p/q', 'http://localhost:3000/p/q'],
    [':3000/p', 'http://localhost:3000/p'],
    ['localhost:3000/p', 'http://localhost:3000/p'],
    ['127.0.0.1:3000/p?x=1', 'http://127.0.0.1:3000/p?x=1'],
    ['/p', 'http://localhost/p'],
    ['https://hooks.example.com/in', 'https://hooks.example.com/in'],
  ])('reads %s as %s', async (given, url) => {
    expect(target(await options(args(given)))).toBe(url);
  });

  it.each([
    ['http://alice:s3cr3t@localhost:99999/', /: a port is at most 65535/],
    ['localhost:70000/p', /: a port is at most 65535/],
    ['ftp://alice:s3cr3t@localhost/in', /: only http:\/\/ and https:\/\/ can be posted to/],
    ['example.test/hooks', /takes a URL, a port or a path/],
    ['http://', /takes a URL, a port or a path/],
    ['http://[::1', /takes a URL, a port or a path/],
    ['http://[', /takes a URL, a port or a path/],
    ['99999', /takes a URL, a port or a path/],
    ['alice:s3cr3t@localhost:3000/p', /not "REDACTED@localhost:3000\/p"/],
    ['http:/localhost:3000/p', /not "http:\/localhost:3000\/p"/],
    ['//alice:s3cr3t@localhost:3000/p', /not "\/\/REDACTED@localhost:3000\/p": a URL needs its scheme: write http:\/\/ or https:\/\/ before the host/],
  ])('refuses %s, naming the flag and no credential', async (given, why) => {
    const result = await refused(args(given), why, 'a port or path alone means this machine (http://localhost); write a full URL for https or another host');
    expect(result.stderr).toContain(`error: ${flag} takes a URL, a port or a path`);
    expect(result.stderr).not.toContain('s3cr3t');
  });
});

describe('a secret of spaces alone, or a line break from a command substitution, is no secret', () => {
  it.each([
    [['webhook', 'listen', '--secret', '  ']],
    [['webhook', 'send', '--url', '1', '--event', 'ping', '--secret', ' ']],
    [['webhook', 'verify', '--signature', 'sha256=00', '--secret', ' ']],
    [['webhook', 'replay', '.', '--url', '1', '--resign', '--secret', '\n']],
    [['webhook', 'inspect', '.', '--secret', '\t']],
  ])('%j', async (args) => {
    await refused(args, '--secret is only whitespace');
  });

  it.each([['listen'], ['send', '--url', '1', '--event', 'ping'], ['verify', '--signature', 'sha256=00'], ['inspect', '.']])('SVC_WEBHOOK_SECRET of a line break: webhook %s', async (...args) => {
    await refused(['webhook', ...args], 'SVC_WEBHOOK_SECRET is only whitespace', undefined, { env: { SVC_WEBHOOK_SECRET: '\n' } });
  });
});

describe('webhook send', () => {
  it('defaults: JSON, a 30 s timeout, unsigned without a secret', async () => {
    expect(await options(['webhook', 'send', '--url', '8787', '--event', 'push'])).toEqual({
      url: 'http://localhost:8787/',
      event: 'push',
      contentType: 'json',
      timeoutMs: 30_000,
    });
  });

  it('--action, --payload, --content-type, --timeout and the secret, from the flag or SVC_WEBHOOK_SECRET', async () => {
    const args = ['webhook', 'send', '--url', '1', '--event', 'issues', '--action', 'opened', '--payload', 'p.json', '--content-type', 'form', '--timeout', '0.25'];
    expect(await options([...args, '--secret', 'flag'], { env: { SVC_WEBHOOK_SECRET: 'env' } })).toEqual({
      url: 'http://localhost:1/',
      event: 'issues',
      action: 'opened',
      payload: 'p.json',
      contentType: 'form',
      timeoutMs: 250,
      secret: 'flag',
    });
    expect(await options(args, { env: { SVC_WEBHOOK_SECRET: 'env' } })).toMatchObject({ secret: 'env' });
  });

  it.each([
    [['--event', 'ping\r\nX-Evil: 1'], /--event must be an event name such as push or issues, not "ping/],
    [['--event', ''], '--event must be an event name such as push or issues, not ""'],
    [['--event', 'ping', '--secret', ''], '--secret is empty'],
    [['--event', 'ping', '--timeout', '0.0001'], /to the millisecond/],
    [['--event', 'ping', '--timeout', '2500000'], /at most 2000000/],
    [['--event', 'ping', '--content-type', 'xml'], '--content-type must be one of json, form, not "xml"'],
    [['--event', 'ping', '--url', ''], /--url takes a URL, a port or a path/],
    // `--payload "$UNSET"`: the example payload sent in place of the one meant.
    [['--event', 'ping', '--payload', ''], '--payload is empty'],
  ])('refuses %j', async (args, message) => {
    await refused(['webhook', 'send', '--url', '1', ...args], message);
  });

  it('needs --url and --event', async () => {
    await refused(['webhook', 'send', '--event', 'ping'], '--url <url> is required', 'see `svc-migrate webhook send --help`');
    await refused(['webhook', 'send', '--url', '1'], '--event <event> is required');
  });
});

describe('webhook replay', () => {
  it('sends as saved, or re-signed with --resign --secret', async () => {
    expect(await options(['webhook', 'replay', 'deliveries/', '--url', '3000'])).toEqual({ paths: ['deliveries/'], url: 'http://localhost:3000/' });
    expect(await options(['webhook', 'replay', 'a.http', '--url', '3000', '--resign', '--secret', 'new'])).toEqual({
      paths: ['a.http'],
      url: 'http://localhost:3000/',
      secret: 'new',
    });
  });

  it('--resign and --secret go together; the secret is checked', async () => {
    await refused(['webhook', 'replay', '.', '--url', '1', '--resign'], '--resign needs --secret, the secret to sign with');
    await refused(['webhook', 'replay', '.', '--url', '1', '--secret', 'new'], '--secret is used only with --resign',
      'add --resign to sign the deliveries again with it; without, they are sent as saved');
    await refused(['webhook', 'replay', '.', '--url', '1', '--resign', '--secret', ''], '--secret is empty', 'pass the secret the receiver verifies with');
  });

  it('several files and directories, --failed DIR, --ids FILE', async () => {
    expect(await options(['webhook', 'replay', 'a.http', 'old/', 'b.http', '--url', '3000'])).toEqual({ paths: ['a.http', 'old/', 'b.http'], url: 'http://localhost:3000/' });
    expect(await options(['webhook', 'replay', '--failed', 'deliveries', '--url', '3000'])).toEqual({ paths: [], failed: 'deliveries', url: 'http://localhost:3000/' });
    expect(await options(['webhook', 'replay', '--failed', 'd', '--ids', 'ids.txt', '--url', '3000'])).toMatchObject({ failed: 'd', idsFile: 'ids.txt' });
    expect(await options(['webhook', 'replay', 'd/', '--ids', 'ids.txt', '--url', '3000'])).toMatchObject({ paths: ['d/'], idsFile: 'ids.txt' });
  });

  it('needs deliveries to send (files, directories or --failed), not both ways, and --url', async () => {
    await refused(['webhook', 'replay', '--url', '1'], 'name the deliveries to send: saved .http files or directories, or --failed DIR',
      '`webhook replay --failed DIR --url …` sends those whose forward failed during `webhook listen --save DIR`');
    await refused(['webhook', 'replay', '--ids', 'ids.txt', '--url', '1'], 'name the deliveries to send: saved .http files or directories, or --failed DIR');
    await refused(['webhook', 'replay', 'd/', '--failed', 'd', '--url', '1'], '--failed DIR takes the place of FILE-OR-DIR arguments');
    await refused(['webhook', 'replay', '--failed', '', '--url', '1'], '--failed is empty');
    await refused(['webhook', 'replay', 'd/', '--ids', '', '--url', '1'], '--ids is empty');
    await refused(['webhook', 'replay', 'd/', '', '--url', '1'], 'a FILE-OR-DIR argument is empty');
    await refused(['webhook', 'replay', '.'], '--url <url> is required');
  });
});

describe('webhook inspect', () => {
  it('defaults: a free port, the newest deliveries, unverified', async () => {
    expect(await options(['webhook', 'inspect', 'deliveries'])).toEqual({ dir: 'deliveries', port: 0, secrets: [], keep: DEFAULT_KEEP });
  });

  it('--secret repeated with SVC_WEBHOOK_SECRET after them (once), --port, --keep and a forward target', async () => {
    const args = ['webhook', 'inspect', 'd', '--secret', 'a', '--secret', 'b', '--port', '9000', '--keep', '20', '--forward-to', '3000/in', '--forward-timeout', '5'];
    expect(await options(args, { env: { SVC_WEBHOOK_SECRET: 'c' } })).toEqual({
      dir: 'd',
      port: 9000,
      secrets: ['a', 'b', 'c'],
      keep: 20,
      forward: { target: 'http://localhost:3000/in', timeoutMs: 5000 },
    });
    expect(await options(['webhook', 'inspect', 'd', '--secret', 'a'], { env: { SVC_WEBHOOK_SECRET: 'a' } })).toMatchObject({ secrets: ['a'] });
  });

  it('refuses an empty secret, a --keep of 0, a port beyond 65535 and a missing directory', async () => {
    await refused(['webhook', 'inspect', 'd', '--secret', ''], '--secret is empty', 'pass the secret the deliveries were signed with, or leave --secret out to show them unverified');
    await refused(['webhook', 'inspect', 'd', '--keep', '0'], /expected a positive integer, not "0"/);
    await refused(['webhook', 'inspect', 'd', '--port', '65536'], /a port is a whole number from 0 to 65535/);
    await refused(['webhook', 'inspect'], 'missing the <dir> argument');
  });
});

describe('webhook verify', () => {
  it('every --secret, then SVC_WEBHOOK_SECRET if it is another; --signature as given', async () => {
    expect(await options(['webhook', 'verify', '--secret', 's', '--signature', 'sha256=00'])).toEqual({ secrets: ['s'], signature: 'sha256=00' });
    expect(await options(['webhook', 'verify', '--signature', 'sha1=00'], { env: { SVC_WEBHOOK_SECRET: 'e' } })).toEqual({ secrets: ['e'], signature: 'sha1=00' });
    expect(await options(['webhook', 'verify', '--secret', 'old', '--secret', 'new', '--signature', 'sha256=00'], { env: { SVC_WEBHOOK_SECRET: 'e' } }))
      .toEqual({ secrets: ['old', 'new', 'e'], signature: 'sha256=00' });
    expect(await options(['webhook', 'verify', '--secret', 'e', '--signature', 'sha256=00'], { env: { SVC_WEBHOOK_SECRET: 'e' } })).toEqual({ secrets: ['e'], signature: 'sha256=00' });
    // Each one checked: `--secret "$UNSET"` among others would verify with a key nobody chose.
    await refused(['webhook', 'verify', '--secret', 'old', '--secret', ' ', '--signature', 'sha256=00'], '--secret is only whitespace');
  });

  it('needs a secret and a signature', async () => {
    await refused(['webhook', 'verify', '--signature', 'sha256=00'], '--secret is required (or SVC_WEBHOOK_SECRET)');
    await refused(['webhook', 'verify', '--signature', 'sha256=00', '--secret', ''], '--secret is empty', 'pass the webhook\'s secret');
    await refused(['webhook', 'verify', '--secret', 's'], '--signature <value> is required');
  });
});

describe('webhook events', () => {
  it('the catalogue, one event, or the payload of one', async () => {
    expect(await options(['webhook', 'events'])).toEqual({ show: 'catalogue' });
    expect(await options(['webhook', 'events', 'issues'])).toMatchObject({ show: 'event', detail: { name: 'issues', described_action: 'assigned' } });
    expect(await options(['webhook', 'events', 'issues', '--example'])).toEqual({ show: 'example', detail: expect.objectContaining({ name: 'issues' }) });
    expect(await options(['webhook', 'events', 'issues', '--example', 'closed'])).toMatchObject({ show: 'example', action: 'closed' });
    // A dispatch's action is the dispatcher's own event_type.
    expect(await options(['webhook', 'events', 'repository_dispatch', '--example', 'deploy.prod'])).toMatchObject({ action: 'deploy.prod' });
  });

  it('an unknown event suggests the nearest name', async () => {
    const catalogue = 'run `svc-migrate webhook events` for the catalogue';
    await refused(['webhook', 'events', 'isues'], 'unknown event "isues"; did you mean "issues"?', catalogue);
    const far = await refused(['webhook', 'events', 'zzzzzzzzzz'], 'unknown event "zzzzzzzzzz"', catalogue);
    expect(far.stderr).not.toMatch(/did you mean/);
    expect(await jsonRefusal(['webhook', 'events', 'pull_requests', '--json'])).toBe('unknown event "pull_requests"; did you mean "pull_request"?');
  });

  it('--example: an action the event has, and an event first', async () => {
    await refused(['webhook', 'events', 'issues', '--example', 'clsed'],
      `--example: issues has no action "clsed" (did you mean "closed"?); its actions are ${eventActions('issues').join(', ')}`,
      'name one of them: svc-migrate webhook events issues --example closed');
    await refused(['webhook', 'events', 'push', '--example', 'created'], '--example: push payloads carry no action, so there is no "created"',
      'give --example alone: svc-migrate webhook events push --example');
    await refused(['webhook', 'events', '--example', 'issues'], '--example needs an event, and "issues" was read as its action',
      'name the event first: svc-migrate webhook events issues --example');
    await refused(['webhook', 'events', '--example'], '--example needs an event', 'name the event first: svc-migrate webhook events issues --example closed');
  });
});
