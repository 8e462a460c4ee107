import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript build script without types
import { BUNDLE, buildSamples, renderSamples } from '../../scripts/build-samples.js';
import { cataloguePairs } from '../../src/webhook/catalogue.js';
import { examplePayload, samplePayload } from '../../src/webhook/samples.js';

describe('built-in sample payloads', () => {
  it('are what scripts/build-samples.js makes of the published examples (run `npm run samples` when this fails)', () => {
    expect(readFileSync(BUNDLE, 'utf8')).toBe(renderSamples(buildSamples()));
  }, 120_000);

  it('hold one payload for every event and action the catalogue knows, and stay small: what recurs is written once', () => {
    const bundle = JSON.parse(readFileSync(BUNDLE, 'utf8')) as { payloads: Record<string, Record<string, unknown>>; shared: unknown[] };
    const held = Object.entries(bundle.payloads).flatMap(([event, payloads]) => Object.keys(payloads).map((key) => `${event}.${key}`));
    expect(held).toHaveLength(cataloguePairs().length);
    for (const { event, action } of cataloguePairs()) {
      const payload = samplePayload(event, action);
      if (action !== undefined && event !== 'repository_dispatch') expect(payload.action, `${event}.${action}`).toBe(action);
      expect(JSON.stringify(payload), `${event}.${action}`).not.toContain('$shared');
    }
    expect(bundle.shared.length).toBeGreaterThan(0);
    expect(readFileSync(BUNDLE).length).toBeLessThan(700_000);
  });

  it('are fresh copies: changing one changes no other', () => {
    const first = samplePayload('issues', 'opened');
    (first.repository as Record<string, unknown>).name = 'changed';
    expect((samplePayload('issues', 'opened').repository as Record<string, unknown>).name).not.toBe('changed');
    expect((samplePayload('issues', 'closed').repository as Record<string, unknown>).name).not.toBe('changed');
    expect(examplePayload('issues', 'closed').payload.issue).toMatchObject({ state: 'closed' });
  });
});
