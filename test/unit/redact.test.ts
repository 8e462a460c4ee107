import { describe, expect, it } from 'vitest';
import { redactHeader, redactUrl, scrub } from '../../src/api/redact.js';

describe('redaction', () => {
  it('hides signed URL credentials but keeps the rest readable', () => {
    const url =
      'https://storage.example.com/archive.tar.gz?X-Amz-Credential=AKIA123&X-Amz-Signature=abcdef&token=s3cr3t&expires=1700000000';
    const redacted = redactUrl(url);
    expect(redacted).not.toMatch(/AKIA123|abcdef|s3cr3t/);
    expect(redacted).toContain('expires=1700000000');
    expect(redacted).toContain('X-Amz-Signature=[REDACTED]');
    expect(redactUrl('https://user:pw@host/x')).not.toContain('pw');
    const hook = redactUrl('http://127.0.0.1/h?pass=PS&jwt=JW&bearer=BR&hmac=HM&code=CC&session=SE&sid=SD&otp=OT&page=2');
    expect(hook).not.toMatch(/PS|JW|BR|HM|CC|SE|SD|OT/);
    expect(hook).toContain('page=2');
  });

  it('hides authorization headers whatever the scheme', () => {
    expect(redactHeader('Authorization', 'Bearer ghp_abc')).toBe('Bearer [REDACTED]');
    expect(redactHeader('accept', 'application/vnd.service+json')).toBe('application/vnd.service+json');
    expect(redactHeader('location', 'https://s/x?sig=1')).toBe('https://s/x?sig=[REDACTED]');
    expect(redactHeader('Authorization', 'ghp_abc')).toBe('[REDACTED]');
  });

  it('hides the value of a header named like a credential, and any value opening with a credential scheme', () => {
    for (const name of ['X-Api-Key', 'X-Auth-Token', 'X-Shared-Secret', 'Cookie', 'X-Session', 'X-Hub-Signature-256']) {
      expect(redactHeader(name, 'abc123'), name).toBe('[REDACTED]');
    }
    expect(redactHeader('X-Upstream', 'Bearer abc123')).toBe('Bearer [REDACTED]');
    expect(redactHeader('X-Env', 'dev')).toBe('dev');
    expect(redactHeader('Accept-Encoding', 'gzip')).toBe('gzip');
  });

  it('scrubs a secret anywhere in a text', () => {
    expect(scrub('token ghp_abc in ghp_abc', ['ghp_abc'])).toBe('token [REDACTED] in [REDACTED]');
  });
});
