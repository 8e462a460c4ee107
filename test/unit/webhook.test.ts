import { describe, expect, it } from 'vitest';
import { CATALOGUE, catalogueWarnings, eventSpec, parseEventFilter } from '../../src/webhook/catalogue.js';
import { buildDelivery, parsePayload } from '../../src/webhook/delivery.js';
import { sign, verifySignature } from '../../src/webhook/signature.js';

describe('signatures (docs/service.md#authentication)', () => {
  // The worked example of the service's documentation of webhook validation.
  const secret = 'It\'s a Secret to Everybody';
  const body = Buffer.from('Hello, World!');

  it('signs the raw bytes with HMAC-SHA256 and HMAC-SHA1', () => {
    expect(sign(body, secret)).toBe('sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
    expect(sign(body, secret, 'sha1')).toMatch(/^sha1=[0-9a-f]{40}$/);
  });

  it('accepts a match with any secret of a rotation and says which', () => {
    const result = verifySignature(body, { signature256: sign(body, secret) }, ['old', secret]);
    expect(result).toEqual({ valid: true, algorithm: 'sha256', legacy: false, secretIndex: 1 });
  });

  it('uses sha1 only when the 256 header is absent, and flags it as legacy', () => {
    expect(verifySignature(body, { signature: sign(body, secret, 'sha1') }, [secret])).toMatchObject({ valid: true, legacy: true });
    const both = verifySignature(body, { signature256: 'sha256=' + '0'.repeat(64), signature: sign(body, secret, 'sha1') }, [secret]);
    expect(both.valid).toBe(false);
  });

  it.each([
    ['missing', {}, /no X-Hub-Signature-256/],
    ['wrong prefix', { signature256: sign(body, secret).replace('sha256=', 'sha1=') }, /malformed/],
    ['short', { signature256: 'sha256=abcd' }, /malformed/],
    ['not hex', { signature256: `sha256=${'z'.repeat(64)}` }, /malformed/],
    ['hex but for its last character', { signature256: `sha256=${'a'.repeat(63)}g` }, /malformed/],
    ['another secret', { signature256: sign(body, 'other') }, /different secret/],
    ['altered body', { signature256: sign(Buffer.from('Hello, World?'), secret) }, /altered in transit/],
  ])('rejects a %s signature with a reason', (_name, headers, reason) => {
    const result = verifySignature(body, headers, [secret]);
    expect(result.valid).toBe(false);
    if (!result.valid) expect(result.reason).toMatch(reason);
  });
});

describe('event catalogue (docs/service.md#event-catalogue)', () => {
  it('holds every event with its deviations from the common rule', () => {
    expect(CATALOGUE.size).toBe(69);
    expect(eventSpec('check_run')).toMatchObject({ action: 'optional', absent: ['enterprise'] });
    expect(eventSpec('membership')?.required).toEqual(expect.arrayContaining(['organization', 'sender', 'team', 'scope']));
    expect(eventSpec('membership')?.optional).toContain('repository');
    expect(eventSpec('ping')).toMatchObject({ action: 'none', required: [] });
    expect(eventSpec('push')?.optional).toContain('sender');
    expect(eventSpec('projects_v2')).toMatchObject({ beta: true, absent: ['repository'] });
    expect(eventSpec('registry_package')?.deprecated).toBe(true);
  });

  it('warns about unknown events, missing required properties and unexpected actions', () => {
    expect(catalogueWarnings('nope', {})).toEqual(['unknown event "nope" (not in the catalogue)']);
    expect(catalogueWarnings('issues', { action: 'opened', sender: {} })).toEqual(['missing required repository, issue']);
    expect(catalogueWarnings('push', { action: 'x', ...Object.fromEntries(eventSpec('push')!.required.map((k) => [k, null])) })).toEqual([
      '"push" carries no action, but this payload has action "x"',
    ]);
  });

  it('checks --events against the catalogue and suggests the closest name', () => {
    expect(parseEventFilter('push, issues.opened')).toEqual([{ event: 'push' }, { event: 'issues', action: 'opened' }]);
    expect(parseEventFilter('repository_dispatch.deploy.prod')).toEqual([{ event: 'repository_dispatch', action: 'deploy.prod' }]);
    expect(() => parseEventFilter('pull_requests')).toThrow(/did you mean "pull_request"/);
    expect(() => parseEventFilter('push.created')).toThrow(/has no actions/);
  });
});

describe('deliveries (docs/service.md#delivery-headers)', () => {
  it('builds every header, a fresh GUID, and both signatures only with a secret', () => {
    const signed = buildDelivery({ event: 'push', payload: { ref: 'refs/heads/main' }, contentType: 'json', secret: 's' });
    expect(signed.headers).toMatchObject({
      'content-type': 'application/json',
      'x-service-event': 'push',
      'x-service-hook-id': expect.any(String),
      'x-service-hook-installation-target-type': expect.any(String),
      'x-service-hook-installation-target-id': expect.any(String),
      'x-hub-signature-256': sign(signed.body, 's'),
      'x-hub-signature': sign(signed.body, 's', 'sha1'),
      'content-length': String(signed.body.length),
    });
    expect(signed.headers['user-agent']).toMatch(/^Service-Hookshot\//);
    expect(signed.id).toMatch(/^[0-9a-f-]{36}$/);
    const unsigned = buildDelivery({ event: 'push', payload: {}, contentType: 'form' });
    expect(unsigned.headers).not.toHaveProperty('x-hub-signature-256');
    expect(unsigned.body.toString()).toBe('payload=%7B%7D');
  });

  it('parses JSON and form bodies and explains what is wrong with bad ones', () => {
    expect(parsePayload(Buffer.from('payload=%7B%22a%22%3A1%7D'), 'form')).toEqual({ a: 1 });
    expect(() => parsePayload(Buffer.from('a=1'), 'form')).toThrow(/without a "payload" field/);
    expect(() => parsePayload(Buffer.from('a=1&xpayload=%7B%7D'), 'form')).toThrow(/without a "payload" field/);
    // The first payload field, wherever it stands, decoded as URLSearchParams decodes ('+' is a space).
    expect(parsePayload(Buffer.from('a=1&&payload=%7B%22a%22%3A%22x+y%25%22%7D&payload=%7B%7D&b'), 'form')).toEqual({ a: 'x y%' });
    // Bytes that are not UTF-8 are refused in a form as in a JSON body, not replaced; a BOM is read as in a JSON body.
    for (const bytes of ['%FF', '%ED%A0%80', '%C0%AF', '%zz']) {
      expect(() => parsePayload(Buffer.from(`payload=%7B%22a%22%3A%22${bytes}%22%7D`), 'form'), bytes).toThrow(/not percent-encoded UTF-8/);
    }
    expect(parsePayload(Buffer.from('payload=%EF%BB%BF%7B%22a%22%3A%22%C3%A9%22%7D'), 'form')).toEqual({ a: 'é' });
    expect(() => parsePayload(Buffer.from('{"a":'), 'json')).toThrow(/malformed JSON/);
    expect(() => parsePayload(Buffer.from([0x7b, 0xff, 0x7d]), 'json')).toThrow(/not valid UTF-8/);
    // An overlong encoding and a lone surrogate are invalid too; a byte-order mark is not content.
    expect(() => parsePayload(Buffer.from([0x22, 0xc0, 0xaf, 0x22]), 'json')).toThrow(/not valid UTF-8/);
    expect(() => parsePayload(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]), 'json')).toThrow(/not valid UTF-8/);
    expect(parsePayload(Buffer.from('\ufeff{"a":"é"}'), 'json')).toEqual({ a: 'é' });
  });
});
