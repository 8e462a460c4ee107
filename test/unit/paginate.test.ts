import { describe, expect, it } from 'vitest';
import { clampPerPage, parseLinkHeader } from '../../src/api/paginate.js';

describe('parseLinkHeader', () => {
  it('reads every relation of a service Link header', () => {
    const header =
      '<https://api.example.com/orgs/acme/migrations?per_page=2&page=3>; rel="next", ' +
      '<https://api.example.com/orgs/acme/migrations?per_page=2&page=1>; rel="prev", ' +
      '<https://api.example.com/orgs/acme/migrations?per_page=2&page=1>; rel="first", ' +
      '<https://api.example.com/orgs/acme/migrations?per_page=2&page=5>; rel="last"';
    expect(parseLinkHeader(header)).toEqual({
      next: 'https://api.example.com/orgs/acme/migrations?per_page=2&page=3',
      prev: 'https://api.example.com/orgs/acme/migrations?per_page=2&page=1',
      first: 'https://api.example.com/orgs/acme/migrations?per_page=2&page=1',
      last: 'https://api.example.com/orgs/acme/migrations?per_page=2&page=5',
    });
  });

  it('copes with missing headers, unquoted rels, several rels and commas inside URLs', () => {
    expect(parseLinkHeader(undefined)).toEqual({});
    expect(parseLinkHeader('')).toEqual({});
    expect(parseLinkHeader('<https://x/a?b=1,2>; rel=next')).toEqual({ next: 'https://x/a?b=1,2' });
    expect(parseLinkHeader('<https://x/1>; rel="first prev"')).toEqual({ first: 'https://x/1', prev: 'https://x/1' });
    expect(parseLinkHeader('garbage, <https://x/2>; title="t"; rel="last"')).toEqual({ last: 'https://x/2' });
  });
});

describe('clampPerPage', () => {
  it('keeps values in 1..100 and explains any change', () => {
    expect(clampPerPage(30)).toEqual({ perPage: 30 });
    expect(clampPerPage(100)).toEqual({ perPage: 100 });
    expect(clampPerPage(250).perPage).toBe(100);
    expect(clampPerPage(250).notice).toMatch(/maximum/);
    expect(clampPerPage(0)).toMatchObject({ perPage: 1, notice: expect.stringMatching(/below 1/) });
  });
});
