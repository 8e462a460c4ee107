import { describe, expect, it } from 'vitest';
import { createForwarder, type ForwardPace } from '../../src/webhook/forwarder.js';
import type { ReceivedDelivery } from '../../src/webhook/receiver.js';
import { startScriptedServer } from '../helpers/scripted-server.js';

// Who the full-queue warning blames (docs/cli.md#webhook-listen): the app only once it had time to
// answer, never for forwards that have only just started.

const delivery = (sequence: number) =>
  ({
    sequence,
    id: `d-${sequence}`,
    event: 'issues',
    action: 'opened',
    rawBody: Buffer.from('{}'),
    rawHeaders: () => ['X-Service-Delivery', `d-${sequence}`, 'Content-Type', 'application/json'],
  }) as unknown as ReceivedDelivery;

function forwarderTo(url: string, paces: ForwardPace[]) {
  return createForwarder(
    {
      target: url,
      timeoutMs: 10_000,
      concurrency: 1,
      maxWaiting: 1,
      maxWaitingBytes: 1024 * 1024,
      headers: [],
      retries: 0,
      clock: { now: () => 0, sleep: () => Promise.resolve() },
      signal: new AbortController().signal,
      savedAs: () => undefined,
    },
    {
      onForward: () => {},
      onBehind: (_waiting, pace) => void paces.push(pace),
      onCaughtUp: () => {},
      onFault: (error) => {
        throw error;
      },
    },
  );
}

describe('the forward queue full', () => {
  it('before any answer, none having waited long: says it is too soon to tell, blaming no app none of whose forwards has waited yet', async () => {
    const app = await startScriptedServer((_request, response) => response.writeHead(200).end('ok'));
    try {
      const paces: ForwardPace[] = [];
      const forwarder = forwarderTo(app.url, paces);
      // In one turn: the first forward has not even been sent, the second waits, and the third finds the queue full.
      forwarder.add(delivery(1));
      forwarder.add(delivery(2));
      forwarder.add(delivery(3));
      expect(paces).toEqual([expect.objectContaining({ bottleneck: 'early', running: 1, answered: 0, ended: 0 })]);
      await forwarder.drained();
    } finally {
      await app.close();
    }
  });
});

describe('the pace of the app', () => {
  it('leaves out the session\'s first attempt, which paid for the set-up, once another answer says how fast the app is', async () => {
    let hold = false;
    const app = await startScriptedServer((_request, response) => void (hold ? undefined : response.writeHead(200).end('ok')));
    try {
      const paces: ForwardPace[] = [];
      const forwarder = forwarderTo(app.url, paces);
      forwarder.add(delivery(1));
      await forwarder.drained();
      forwarder.add(delivery(2));
      await forwarder.drained();
      hold = true;
      forwarder.add(delivery(3));
      forwarder.add(delivery(4));
      forwarder.add(delivery(5));
      expect(paces).toEqual([expect.objectContaining({ answered: 1, firstOnly: false, ended: 2 })]);
    } finally {
      await app.close();
    }
  });
});
