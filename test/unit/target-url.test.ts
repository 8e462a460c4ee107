import { describe, expect, it } from 'vitest';
import { targetUrl } from '../../src/webhook/target-url.js';

// One rule for every flag that names where deliveries go (docs/cli.md#where-deliveries-go).
describe.each(['--url', '--forward-to'])('%s', (flag) => {
  it.each([
    ['3000', 'http://localhost:3000/'],
    ['3000/webhooks', 'http://localhost:3000/webhooks'],
    [':3000/x', 'http://localhost:3000/x'],
    ['/hooks', 'http://localhost/hooks'],
    ['localhost:3000/x', 'http://localhost:3000/x'],
    ['127.0.0.1:8080', 'http://127.0.0.1:8080/'],
    ['[::1]:8787/in', 'http://[::1]:8787/in'],
    ['3000/a?b=c', 'http://localhost:3000/a?b=c'],
    ['https://example.test/in', 'https://example.test/in'],
    ['http://alice:pw@127.0.0.1:3000/in', 'http://alice:pw@127.0.0.1:3000/in'],
  ])('reads %s as %s', (given, expected) => {
    expect(targetUrl(given, flag)).toBe(expected);
  });

  it.each([
    ['not a url', ''],
    ['', ''],
    ['example.test/hooks', ''],
    ['99999', 'a port is at most 65535'],
    ['localhost:65536/x', 'a port is at most 65535'],
    ['http://example.test:70000/', 'a port is at most 65535'],
    ['0', 'port 0 cannot be posted to'],
    ['ftp://example.test/in', 'only http:// and https:// can be posted to'],
    ['http://[', ''],
  ])('refuses %s, naming the flag', (given, why) => {
    expect(() => targetUrl(given, flag)).toThrow(`${flag} takes a URL, a port or a path`);
    if (why) expect(() => targetUrl(given, flag)).toThrow(why);
  });

  it('never repeats credentials of a URL it refuses', () => {
    for (const given of ['http://alice:s3cret@example.test:99999/', 'http://alice:s3cret@[/', 'http://h:99999/?token=s3cret']) {
      expect(() => targetUrl(given, flag)).toThrow(expect.objectContaining({ message: expect.not.stringContaining('s3cret') }));
    }
  });
});
