import { mkdtempSync, readdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { InterruptedError } from '../../src/errors.js';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { listen, post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { startScriptedServer } from '../helpers/scripted-server.js';

// One rule for where deliveries go (docs/cli.md#where-deliveries-go), the same for `send --url`,
// `replay --url` and `listen --forward-to`: each short form through each command, to a real server
// (what each form reads as, and the refusals, are in test/commands/webhook.test.ts).

const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

/** The short forms and full URL for a server on `port` of this machine, and the request-target each reaches. */
const forms = (port: number): [string, string][] => [
  [`${port}`, '/'],
  [`${port}/p/q`, '/p/q'],
  [`:${port}/p`, '/p'],
  [`localhost:${port}/p`, '/p'],
  [`127.0.0.1:${port}/p?x=1`, '/p?x=1'],
  [`http://127.0.0.1:${port}/p`, '/p'],
];

/** The three commands, each posting one delivery to `url`: its exit code. */
const commands: Record<string, (url: string) => Promise<number | null>> = {
  'send --url': async (url) => (await runCli(['webhook', 'send', '--url', url, '--event', 'ping'])).code,
  'replay --url': async (url) => (await runCli(['webhook', 'replay', saved, '--url', url])).code,
  'listen --forward-to': async (url) => {
    const listener = await listen(['--forward-to', url, '--max-deliveries', '1']);
    const delivery = buildDelivery({ event: 'ping', payload: { zen: 'z', hook_id: 1 }, contentType: 'json' });
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    return listener.exited;
  },
};
const argsFor = (command: string, url: string) =>
  command === 'send --url'
    ? ['webhook', 'send', '--url', url, '--event', 'ping']
    : command === 'replay --url'
      ? ['webhook', 'replay', saved, '--url', url]
      : ['webhook', 'listen', '--port', '0', '--forward-to', url];

/** A saved delivery for `replay` to send. */
let saved = '';
beforeAll(async () => {
  const dir = tempDir('svc-urls-');
  const listener = await listen(['--save', dir, '--max-deliveries', '1']);
  const delivery = buildDelivery({ event: 'ping', payload: { zen: 'z', hook_id: 1 }, contentType: 'json' });
  await post(listener.url, delivery.headers, delivery.body);
  await listener.exited;
  saved = join(dir, readdirSync(dir)[0] as string);
});

/** Something on this machine answers on port 80: where a bare path goes is then that server's to say. */
const PORT_80_ANSWERS = await port80Answers();

describe.each(Object.keys(commands))('%s', (command) => {
  it('reaches the server by every short form and by its full URL', async () => {
    const app = await startScriptedServer((_request, response) => response.writeHead(200).end('ok'));
    try {
      for (const [form, target] of forms(app.port)) {
        expect(await commands[command]?.(form), form).toBe(0);
        expect(app.requests.at(-1)?.url, form).toBe(target);
      }
      expect(app.requests).toHaveLength(forms(app.port).length);
    } finally {
      await app.close();
    }
  });

  const port80Skipped = PORT_80_ANSWERS && command !== 'listen --forward-to';
  it.skipIf(port80Skipped)(`reads /path as http://localhost/path${port80Skipped ? ' (skipped: something answers on port 80 here)' : ''}`, async () => {
    // Port 80 cannot be served by a test: what the command says shows where it went.
    if (command === 'listen --forward-to') {
      const controller = new AbortController();
      const result = await runCli(['webhook', 'listen', '--port', '0', '--forward-to', '/p'], {
        signal: controller.signal,
        onStderr: (text) => {
          if (/listening on/.test(text)) controller.abort(new InterruptedError());
        },
      });
      expect(result.code, result.stderr).toBe(130);
      expect(result.stderr).toMatch(/, forwarding to http:\/\/localhost\/p\n/);
      return;
    }
    const result = await runCli(argsFor(command, '/p'));
    expect(result.code, result.stderr).not.toBe(2);
    if (command === 'send --url') expect(result.stderr).toMatch(/could not deliver to http:\/\/localhost\/p: connect ECONNREFUSED/);
    else expect(result.stdout).toMatch(/: failed \(connect ECONNREFUSED [^)]*:80\)/);
  });
});

it('listen --forward-to its own port by a short form is still refused as this receiver', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  for (const form of [`:${port}/`, `localhost:${port}`, `127.0.0.1:${port}/`]) {
    const result = await runCli(['webhook', 'listen', '--port', String(port), '--forward-to', form]);
    expect(result.code, form).toBe(2);
    expect(result.stderr).toMatch(/is this receiver: each delivery would come back/);
  }
});

function port80Answers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(80, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
