import { afterEach, describe, expect, it } from 'vitest';
import { createDispatcher } from '../../src/api/dispatcher.js';
import { CliError } from '../../src/errors.js';
import type { Clock } from '../../src/support/clock.js';
import type { RelayGap } from '../../src/webhook/relay/types.js';
import { startListener } from '../../src/webhook/listener.js';
import type { ReceivedDelivery, Rejection } from '../../src/webhook/receiver.js';
import { readRelay } from '../../src/webhook/relay/client.js';
import { empty, type Handler, type ScriptedServer, startScriptedServer } from '../helpers/scripted-server.js';

// Reading a relay channel (src/webhook/relay/client.ts) from scripted relays: the first connection
// must succeed (exit 2 or 8 as the answer says), every later loss is a gap told twice, the stream is
// read again after waits that double with jitter, on the injected clock, and only unnamed events are
// deliveries.

let relay: ScriptedServer | undefined;
const dispatcher = createDispatcher(undefined, undefined, undefined);
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

/** A clock whose waits cost nothing and are recorded. */
function recordingClock(): Clock & { slept: number[] } {
  let now = Date.UTC(2026, 2, 10, 12, 0, 0);
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: (ms, signal) => {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      slept.push(ms);
      now += ms;
      return new Promise((resolve) => setImmediate(resolve));
    },
  };
}

const stream =
  (frames: string, end: boolean): Handler =>
    (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(frames);
      if (end) response.end();
    };

function options(url: string, clock: Clock, controller: AbortController) {
  const delivered: string[] = [];
  const gaps: { gap: RelayGap; retryInMs: number | undefined }[] = [];
  return {
    delivered,
    gaps,
    reading: {
      url,
      dispatcher,
      clock,
      signal: controller.signal,
      random: () => 0.5,
      ready: () => Promise.resolve(),
      deliver: (data: string) => {
        delivered.push(data);
        return Promise.resolve();
      },
      onGap: (gap: RelayGap, retryInMs: number | undefined) => gaps.push({ gap, retryInMs }),
    },
  };
}

describe('relay reader (src/webhook/relay/client.ts)', () => {
  it('the first connection must succeed: 404 and a page are exit 2 with the hint, 503, 429 and no listener exit 8', async () => {
    relay = await startScriptedServer(
      empty(404),
      (_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>'),
      empty(503),
      empty(429),
    );
    const codes: [number, string][] = [];
    for (let i = 0; i < 4; i++) {
      const { reading } = options(`${relay.url}/chan`, recordingClock(), new AbortController());
      const error = await readRelay(reading).then(() => undefined, (failure: unknown) => failure);
      expect(error).toBeInstanceOf(CliError);
      codes.push([(error as CliError).exitCode, `${(error as CliError).message} ${(error as CliError).hint ?? ''}`]);
    }
    expect(codes[0]).toEqual([2, expect.stringMatching(/answered 404 .*webhook relay new/)]);
    expect(codes[1]).toEqual([2, expect.stringMatching(/answered 200 with text\/html, not an event stream/)]);
    expect(codes[2]).toEqual([8, expect.stringMatching(/answered 503/)]);
    // A relay's limit on readers is no wrong URL: said so, with what to do.
    expect(codes[3]).toEqual([8, expect.stringMatching(/answered 429 .*no more readers.* close the channel's other readers/)]);
    expect(relay.requests.map((request) => request.headers.accept)).toEqual(Array(4).fill('text/event-stream'));
    const { port } = relay;
    await relay.close();
    relay = undefined;
    const { reading } = options(`http://127.0.0.1:${port}/chan`, recordingClock(), new AbortController());
    await expect(readRelay(reading)).rejects.toMatchObject({ exitCode: 8, message: expect.stringMatching(/could not read the relay channel/) });
  });

  it('unnamed events are deliveries; a loss is a gap told when it opens and when it closes, read again after doubling waits', async () => {
    relay = await startScriptedServer(
      stream('id: 0\nevent: ready\ndata: {}\n\nid: 1\nevent: ping\ndata: {}\n\nid: 2\ndata: {"n":1}\n\nevent: other\ndata: x\n\nevent: message\ndata: {"n":2}\n\n', true),
      empty(500),
      empty(404),
      stream('id: 0\nevent: ready\ndata: {}\n\nid: 1\ndata: {"n":3}\n\n', false),
    );
    const clock = recordingClock();
    const controller = new AbortController();
    const { reading, delivered, gaps } = options(`${relay.url}/chan`, clock, controller);
    const reader = await readRelay(reading);
    await relay.until(() => relay!.requests.length === 4);
    while (delivered.length < 3) await new Promise((resolve) => setImmediate(resolve));
    expect(delivered).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    // random 0.5: three quarters of 1 s, 2 s, 4 s: a 500 and a 404 after the first loss are tries that failed.
    expect(clock.slept).toEqual([750, 1500, 3000]);
    // Lost, two tries that failed (each told with its reason: silence would read as all being well), read again.
    expect(gaps).toHaveLength(4);
    const [lost, first, second, back] = gaps;
    const opened = { channel: `${relay.url}/chan`, from: '2026-03-10T12:00:00.000Z', to: null };
    expect(lost).toEqual({ gap: { ...opened, reason: 'the relay closed the stream', failedTries: 0 }, retryInMs: 750 });
    expect(first).toEqual({ gap: { ...opened, reason: expect.stringMatching(/answered 500/), failedTries: 1 }, retryInMs: 1500 });
    expect(second).toEqual({ gap: { ...opened, reason: expect.stringMatching(/answered 404/), failedTries: 2 }, retryInMs: 3000 });
    expect(back).toEqual({ gap: { ...lost!.gap, to: '2026-03-10T12:00:05.250Z' }, retryInMs: undefined });
    controller.abort();
    await reader.finished;
    expect(gaps).toHaveLength(4);
  });

  it('a frame cut by a connection lost in its middle is no delivery', async () => {
    relay = await startScriptedServer(
      (_request, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('id: 0\nevent: ready\ndata: {}\n\nid: 1\ndata: {"half":');
        setImmediate(() => response.socket?.destroy());
      },
      stream('id: 0\nevent: ready\ndata: {}\n\nid: 1\ndata: {"n":1}\n\n', false),
    );
    const controller = new AbortController();
    const { reading, delivered, gaps } = options(`${relay.url}/chan`, recordingClock(), controller);
    const reader = await readRelay(reading);
    while (delivered.length < 1) await new Promise((resolve) => setImmediate(resolve));
    expect(delivered).toEqual(['{"n":1}']);
    expect(gaps.map(({ gap }) => gap.to === null)).toEqual([true, false]);
    controller.abort();
    await reader.finished;
  });
});

describe('listen session on a relay (src/webhook/listener.ts)', () => {
  it('does not read the stream while the output is behind: the delivery waits, never refused', async () => {
    relay = await startScriptedServer(stream('id: 0\nevent: ready\ndata: {}\n\nid: 1\ndata: {"x-service-event":"push","x-service-delivery":"d1","content-type":"application/json","body":{"ref":"main"}}\n\n', false));
    const clock = recordingClock();
    let behind = true;
    const shown: ReceivedDelivery[] = [];
    const rejected: Rejection[] = [];
    const listener = await startListener(
      {
        host: '127.0.0.1',
        port: 0,
        serve: false,
        path: '/',
        secrets: [],
        dedupe: true,
        maxConnections: 8,
        filters: [],
        maxDeliveries: 1,
        signal: new AbortController().signal,
        clock,
        outputBehind: () => behind,
        relay: { url: `${relay.url}/chan`, dispatcher },
      },
      {
        onDeliveries: (deliveries) => shown.push(...deliveries),
        onRejection: (rejection) => rejected.push(rejection),
        onDrop: () => {},
        onFault: (error) => {
          throw error;
        },
        onFinishingForwards: () => {},
        onRelayGap: () => {},
        forwarding: { onForward: () => {}, onBehind: () => {}, onCaughtUp: () => {} },
      },
    );
    expect(listener.url).toBeUndefined();
    // The reader looks again on the clock while the output is behind: a few looks, and nothing taken.
    while (clock.slept.length < 5) await new Promise((resolve) => setImmediate(resolve));
    expect(shown).toEqual([]);
    expect(rejected).toEqual([]);
    behind = false;
    const { summary } = await listener.finished;
    expect(shown.map((delivery) => [delivery.id, delivery.relay?.body])).toEqual([['d1', 're-encoded']]);
    expect(rejected).toEqual([]);
    expect(summary).toMatchObject({ received: 1, rejected: 0, relay_gaps: 0 });
  });
});
