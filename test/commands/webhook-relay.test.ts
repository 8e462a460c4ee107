import { describe, expect, it } from 'vitest';
import { options, refused } from '../helpers/command-options.js';

// `webhook listen --relay` and `webhook relay new` read and checked before anything is bound,
// read or sent (src/commands/webhook/listen-relay.ts, src/commands/webhook/relay.ts).

describe('webhook listen --relay', () => {
  it('reads the channel\'s URL; no port is bound unless --port is given', async () => {
    expect(await options(['webhook', 'listen', '--relay', 'https://smee.io/abc'])).toMatchObject({ relay: 'https://smee.io/abc', serve: false });
    const both = (await options(['webhook', 'listen', '--relay', 'https://smee.io/abc', '--port', '8787'])) as Record<string, unknown>;
    expect(both).toMatchObject({ relay: 'https://smee.io/abc', port: 8787 });
    expect(both).not.toHaveProperty('serve');
    expect(await options(['webhook', 'listen'])).not.toHaveProperty('serve');
  });

  it('refuses what is not an http(s) URL, or one with credentials in it (exit 2)', async () => {
    for (const given of ['smee.io/abc', 'ftp://smee.io/abc', '', 'https://user:hunter2@smee.io/abc']) {
      const result = await refused(['webhook', 'listen', '--relay', given], /--relay must be a relay channel's http\(s\) URL without credentials/, /webhook relay new/);
      expect(result.stderr).not.toContain('hunter2');
    }
  });
});

describe('webhook relay new', () => {
  it('asks smee.io by default, or the relay given', async () => {
    expect(await options(['webhook', 'relay', 'new'])).toEqual({ relay: new URL('https://smee.io') });
    expect(await options(['webhook', 'relay', 'new', 'http://127.0.0.1:8080/relay'])).toEqual({ relay: new URL('http://127.0.0.1:8080/relay') });
  });

  it('refuses a RELAY that is not an http(s) URL (exit 2)', async () => {
    for (const given of ['smee.io', 'ftp://smee.io', 'https://smee.io/?x=1']) await refused(['webhook', 'relay', 'new', given], /RELAY must be a relay's http\(s\) URL/);
  });
});
