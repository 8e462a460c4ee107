import { describe, expect, it } from 'vitest';
import { type InboundDelivery, type ReceivedDelivery, type Rejection, startReceiver } from '../../src/webhook/receiver.js';
import { frameDelivery } from '../../src/webhook/relay/frame.js';
import { sign } from '../../src/webhook/signature.js';

// A relay's frame made into a delivery (src/webhook/relay/frame.ts) and taken through the
// receiver's own pipeline (verify → checks → parse → dedupe → save → delivered) with no port
// bound: the header fields kept and those of the relay's own connection dropped, the raw body of
// gosmee's `bodyB` verified as a direct delivery's, smee.io's re-encoded body verified when it
// matches and called unverifiable (never forged) when it does not, a form rebuilt, and hostile
// frames refused with a reason, never a crash.

const SECRET = 'relay-secret';
const CHANNEL = 'https://relay.example/abc';

/** Bodies whose bytes change when parsed and serialized again: key order aside, each of these does. */
const CHANGED_BY_REENCODING = [
  '{"action":"opened","number":1.0}',
  '{"action":"opened","title":"caf\\u00e9"}',
  '{"action":"opened","url":"https:\\/\\/example.com\\/x"}',
  '{ "action" : "opened" }',
  '{"action":"opened",\n"n":1}',
];

function frame(fields: Record<string, unknown>): string {
  return JSON.stringify(fields);
}

function serviceHeaders(body: string | Buffer, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-service-event': 'issues',
    'x-service-delivery': `d-${Math.random().toString(16).slice(2)}`,
    'x-hub-signature-256': sign(Buffer.from(body), SECRET),
    ...extra,
  };
}

function delivered(data: string): InboundDelivery {
  const result = frameDelivery(data, CHANNEL, '/hooks');
  if (!('delivery' in result)) throw new Error(`refused: ${result.refused}`);
  return result.delivery;
}

async function pipeline(secrets = [SECRET]) {
  const deliveries: ReceivedDelivery[] = [];
  const rejections: Rejection[] = [];
  const receiver = await startReceiver({
    host: '127.0.0.1',
    port: 0,
    serve: false,
    path: '/hooks',
    secrets,
    dedupe: true,
    loopbackHostsOnly: secrets.length === 0,
    accept: () => undefined,
    delivered: (batch) => deliveries.push(...batch),
    onRejection: (rejection) => rejections.push(rejection),
  });
  expect(receiver.url).toBeUndefined();
  return { receiver, deliveries, rejections };
}

describe('relay frame → delivery (src/webhook/relay/frame.ts)', () => {
  it('keeps the service\'s fields, drops the relay\'s own, and sets content-length from the body held', () => {
    const body = '{"action":"opened"}';
    const made = delivered(
      frame({
        host: 'smee.io',
        connection: 'close',
        'content-length': '999',
        'accept-encoding': 'gzip',
        'x-forwarded-for': '10.0.0.1',
        'x-forwarded-proto': 'https',
        'x-real-ip': '10.0.0.1',
        'cdn-loop': 'cloudflare',
        'cf-ray': 'abc',
        via: '1.1 vegur',
        'x-request-id': 'r1',
        'x-service-event': 'issues',
        'x-service-delivery': 'id-1',
        'bad name': 'x',
        'x-broken': 'a\nb',
        'x-number': 5,
        'content-type': 'application/json',
        body: JSON.parse(body),
        query: { a: '1', b: ['2', '3'] },
        timestamp: 1_700_000_000_000,
      }),
    );
    expect(made.rawHeaders).toEqual(['x-service-event', 'issues', 'x-service-delivery', 'id-1', 'content-type', 'application/json', 'content-length', String(body.length)]);
    expect(made.target).toBe('/hooks?a=1&b=2&b=3');
    expect(made.relay).toEqual({ channel: CHANNEL, relayedAt: new Date(1_700_000_000_000).toISOString(), body: 're-encoded', formConverted: false });
    expect(made.bodies.map(String)).toEqual([body]);
  });

  it('bodyB: the raw bytes are the body, verified as a direct delivery\'s; altered, refused', async () => {
    const { receiver, deliveries, rejections } = await pipeline();
    const raw = CHANGED_BY_REENCODING[1] as string;
    const headers = serviceHeaders(raw);
    const fields = { ...headers, body: JSON.parse(raw), query: {}, timestamp: '1700000000000', bodyB: Buffer.from(raw).toString('base64') };
    expect((await receiver.take(delivered(frame(fields)))).status).toBe(200);
    expect(deliveries).toHaveLength(1);
    const [one] = deliveries as [ReceivedDelivery];
    expect(one.rawBody.toString()).toBe(raw);
    expect(one.verification).toEqual({ verified: true, algorithm: 'sha256', legacy: false, secret: 1 });
    expect(one.relay).toMatchObject({ body: 'raw', formConverted: false, relayedAt: new Date(1_700_000_000_000).toISOString() });
    expect(one.path).toBe('/hooks');
    const altered = { ...fields, 'x-service-delivery': 'other', bodyB: Buffer.from(raw.replace('caf', 'cof')).toString('base64') };
    expect((await receiver.take(delivered(frame(altered)))).status).toBe(401);
    expect(rejections.map((r) => r.status)).toEqual([401]);
    expect(deliveries).toHaveLength(1);
  });

  it('re-encoded bodies that still match are verified (re-encoded body matched)', async () => {
    const { receiver, deliveries } = await pipeline();
    const raw = '{"action":"opened","issue":{"title":"é \\"x\\"","n":1.5}}';
    expect(JSON.stringify(JSON.parse(raw))).toBe(raw);
    await receiver.take(delivered(frame({ ...serviceHeaders(raw), body: JSON.parse(raw), query: {}, timestamp: 1_700_000_000_000 })));
    expect(deliveries[0]?.verification).toMatchObject({ verified: true, relayed: 'matched' });
    expect(deliveries[0]?.rawBody.toString()).toBe(raw);
  });

  it('re-encoded bodies the relay changed are unverifiable, accepted, never refused as forged', async () => {
    const { receiver, deliveries, rejections } = await pipeline();
    for (const raw of CHANGED_BY_REENCODING) {
      expect(JSON.stringify(JSON.parse(raw))).not.toBe(raw);
      const fields = { ...serviceHeaders(raw), body: JSON.parse(raw), query: {}, timestamp: 1_700_000_000_000 };
      expect((await receiver.take(delivered(frame(fields)))).status).toBe(200);
    }
    expect(rejections).toEqual([]);
    expect(deliveries.map((d) => d.verification)).toEqual(CHANGED_BY_REENCODING.map(() => ({ verified: false, relayed: 'unverifiable' })));
    // What is kept is what smee-client would post: the body serialized again.
    expect(deliveries.map((d) => d.rawBody.toString())).toEqual(CHANGED_BY_REENCODING.map((raw) => JSON.stringify(JSON.parse(raw))));
  });

  it('a re-encoded body without any signature is refused as a direct one would be (nothing was re-encoded away)', async () => {
    const { receiver, rejections } = await pipeline();
    const { 'x-hub-signature-256': _, ...unsigned } = serviceHeaders('{}');
    expect((await receiver.take(delivered(frame({ ...unsigned, body: { action: 'opened' } })))).status).toBe(401);
    expect(rejections[0]?.reason).toMatch(/no X-Hub-Signature-256/);
  });

  it('without a secret: unverified, relayed left unset', async () => {
    const { receiver, deliveries } = await pipeline([]);
    await receiver.take(delivered(frame({ ...serviceHeaders('{}'), body: { action: 'opened' } })));
    expect(deliveries[0]?.verification).toEqual({ verified: false });
  });

  it('a form delivery the relay turned into JSON is rebuilt as a form, with whichever encoding verifies', async () => {
    const { receiver, deliveries } = await pipeline();
    const payload = '{"action":"opened","title":"a b+c & é/?"}';
    const withPlus = `payload=${new URLSearchParams({ payload }).toString().slice('payload='.length)}`;
    const withPercent = `payload=${encodeURIComponent(payload)}`;
    expect(withPlus).not.toBe(withPercent);
    for (const sent of [withPlus, withPercent]) {
      const headers = serviceHeaders(sent, { 'content-type': 'application/x-www-form-urlencoded' });
      await receiver.take(delivered(frame({ ...headers, body: { payload }, query: {}, timestamp: 1_700_000_000_000 })));
    }
    expect(deliveries.map((d) => d.rawBody.toString())).toEqual([withPlus, withPercent]);
    for (const delivery of deliveries) {
      expect(delivery.verification).toMatchObject({ verified: true, relayed: 'matched' });
      expect(delivery.relay?.formConverted).toBe(true);
      expect(delivery.contentType).toBe('form');
      expect(delivery.payloadText()).toBe(payload);
      expect(delivery.warnings).toContain('the relay turned this form-encoded delivery into JSON; it was rebuilt as a form');
    }
  });

  it('a rebuilt form that matches no encoding is unverifiable and kept in URLSearchParams\'s encoding', async () => {
    const { receiver, deliveries } = await pipeline();
    const payload = '{"action":"opened","t":"a b"}';
    const headers = serviceHeaders('payload=something-else', { 'content-type': 'application/x-www-form-urlencoded' });
    await receiver.take(delivered(frame({ ...headers, body: { payload } })));
    expect(deliveries[0]?.verification).toEqual({ verified: false, relayed: 'unverifiable' });
    expect(deliveries[0]?.rawBody.toString()).toBe(new URLSearchParams({ payload }).toString());
  });

  it('hostile frames are refused with a reason, never a crash', () => {
    const cases: [string, RegExp][] = [
      ['not json', /not JSON/],
      ['[1,2]', /not a JSON object/],
      ['null', /not a JSON object/],
      ['"text"', /not a JSON object/],
      [frame({ 'x-service-event': 'push' }), /neither body nor bodyB/],
      [frame({ bodyB: '%%%%' }), /bodyB that is not base64/],
      [frame({ bodyB: 'abc' }), /bodyB that is not base64/],
      [frame({ bodyB: 5 }), /bodyB that is not base64/],
      [frame({ 'content-type': 'application/x-www-form-urlencoded', body: 'payload=x' }), /not an object of fields/],
      [frame({ 'content-type': 'application/x-www-form-urlencoded', body: { payload: { nested: true } } }), /fields are not strings/],
      [frame({ 'content-type': 'application/x-www-form-urlencoded', body: {} }), /fields are not strings/],
    ];
    for (const [data, reason] of cases) {
      const result = frameDelivery(data, CHANNEL, '/');
      expect('refused' in result ? result.refused : 'delivered').toMatch(reason);
    }
  });

  it('odd keys and values are fields like any other or left out: __proto__, constructor, a bad query and timestamp', () => {
    const made = delivered(
      `{"__proto__":"p","constructor":"c","x-service-event":"push","body":{},"query":"a=1","timestamp":"soon"}`,
    );
    expect(made.rawHeaders).toEqual(['__proto__', 'p', 'constructor', 'c', 'x-service-event', 'push', 'content-length', '2']);
    expect(made.headers['x-service-event']).toBe('push');
    expect(made.target).toBe('/hooks');
    expect(made.relay.relayedAt).toBeUndefined();
  });

  it('through the pipeline, a refusal of the checks keeps its reason (a missing event header, a bad content type)', async () => {
    const { receiver, rejections } = await pipeline([]);
    expect((await receiver.take(delivered(frame({ 'x-service-delivery': 'a', 'content-type': 'application/json', body: {} })))).status).toBe(400);
    expect((await receiver.take(delivered(frame({ 'x-service-event': 'push', 'x-service-delivery': 'b', 'content-type': 'text/plain', body: {} })))).status).toBe(415);
    expect(rejections.map((r) => r.reason)).toEqual([expect.stringMatching(/missing x-service-event/), expect.stringMatching(/content type "text\/plain"/)]);
  });
});
