import { describe, expect, it } from 'vitest';
import { errorForStatus } from '../../src/api/http-errors.js';
import { rateLimitWait } from '../../src/api/rate-limit.js';
import { ExitCode } from '../../src/errors.js';

const base = { method: 'GET' as const, url: 'https://api.example.com/orgs/acme/migrations/7', tokenPresent: true };

describe('errorForStatus maps every HTTP failure to one exit code', () => {
  it.each([
    [400, {}, ExitCode.Usage],
    [401, { message: 'Requires authentication' }, ExitCode.Auth],
    [401, { message: 'Bad Credentials' }, ExitCode.Auth],
    [403, { message: 'Resource not accessible by personal access token' }, ExitCode.Auth],
    [404, { message: 'Not Found' }, ExitCode.NotFound],
    [410, {}, ExitCode.NotFound],
    [422, { message: 'Validation Failed' }, ExitCode.Validation],
    [500, {}, ExitCode.Unavailable],
    [503, {}, ExitCode.Unavailable],
    [418, {}, ExitCode.Unavailable],
  ])('HTTP %i → exit %#', (status, body, exitCode) => {
    expect(errorForStatus({ ...base, status, body }).exitCode).toBe(exitCode);
  });

  it('says when the token was revoked', () => {
    const error = errorForStatus({ ...base, status: 401, body: { message: 'Bad Credentials' } });
    expect(error.message).toMatch(/revoked/);
    expect(error.hint).toMatch(/auth login/);
  });

  it('names what was not found', () => {
    const error = errorForStatus({
      ...base,
      status: 404,
      body: {},
      notFound: { message: 'migration 7 was not found in organization acme' },
    });
    expect(error.message).toBe('migration 7 was not found in organization acme');
  });

  it('shows the service\'s validation messages', () => {
    const error = errorForStatus({
      ...base,
      method: 'POST',
      status: 422,
      body: {
        message: 'Validation Failed',
        errors: [{ resource: 'Migration', field: 'repositories', code: 'invalid', message: 'acme/nope not found' }],
      },
    });
    expect(error.message).toContain('repositories: acme/nope not found');
  });

  it('never repeats a token the service echoed back', () => {
    const error = errorForStatus({
      ...base,
      status: 403,
      body: { message: 'token ghp_SECRET1 lacks scope' },
      secrets: ['ghp_SECRET1'],
    });
    expect(error.message).not.toContain('ghp_SECRET1');
  });
});

describe('rateLimitWait', () => {
  const now = 1_700_000_000_000;
  it('treats 403 with x-ratelimit-remaining: 0 as the primary limit and waits until reset + 1 s', () => {
    const wait = rateLimitWait(
      403,
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 30) },
      {},
      now,
      60_000,
    );
    expect(wait).toEqual({ kind: 'primary', ms: 31_000, until: now + 31_000 });
  });

  it('honours retry-after in seconds and as a date', () => {
    expect(rateLimitWait(429, { 'retry-after': '7' }, {}, now, 60_000)?.ms).toBe(7000);
    const date = new Date(now + 12_000).toUTCString();
    expect(rateLimitWait(403, { 'retry-after': date }, {}, now, 60_000)?.ms).toBe(12_000);
  });

  it('falls back to the secondary default when only the body says so', () => {
    expect(rateLimitWait(403, {}, { message: 'You have exceeded a secondary rate limit' }, now, 60_000)).toMatchObject({
      kind: 'secondary',
      ms: 60_000,
    });
  });

  it('leaves a plain 403 alone', () => {
    expect(
      rateLimitWait(403, { 'x-ratelimit-remaining': '4999' }, { message: 'Must be an owner' }, now, 60_000),
    ).toBeUndefined();
  });
});
