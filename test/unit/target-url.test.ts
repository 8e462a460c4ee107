import { describe, expect, it } from 'vitest';
import { deliveryUrl, forwardUrl } from '../../src/webhook/target-url.js';

describe('--forward-to', () => {
  it.each([
    ['3000', 'http://localhost:3000/'],
    ['3000/webhooks', 'http://localhost:3000/webhooks'],
    [':3000/x', 'http://localhost:3000/x'],
    ['/hooks', 'http://localhost/hooks'],
    ['localhost:3000/x', 'http://localhost:3000/x'],
    ['127.0.0.1:8080', 'http://127.0.0.1:8080/'],
    ['https://example.test/in', 'https://example.test/in'],
  ])('reads %s as %s', (given, expected) => {
    expect(forwardUrl(given)).toBe(expected);
  });

  it('refuses anything else', () => {
    expect(() => forwardUrl('not a url')).toThrow(/takes a URL, a port or a path/);
  });
});

describe('webhook send --url', () => {
  it.each([
    ['8787', 'http://127.0.0.1:8787/'],
    ['127.0.0.1:8787', 'http://127.0.0.1:8787/'],
    ['localhost:3000/hooks', 'http://localhost:3000/hooks'],
    ['[::1]:8787', 'http://[::1]:8787/'],
    ['https://example.test/in', 'https://example.test/in'],
  ])('reads %s as %s', (given, expected) => {
    expect(deliveryUrl(given)).toBe(expected);
  });

  it('refuses anything else', () => {
    expect(() => deliveryUrl('/hooks')).toThrow(/--url takes a URL such as/);
  });
});
