import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript build script without types
import { BUNDLE, collectSamples } from '../../scripts/build-samples.js';
import { CATALOGUE } from '../../src/webhook/catalogue.js';
import { samplePayload } from '../../src/webhook/samples.js';

describe('built-in sample payloads', () => {
  it('are the published fixtures, every action of every event (run `npm run samples` when this fails)', () => {
    expect(JSON.parse(readFileSync(BUNDLE, 'utf8'))).toEqual(collectSamples());
  });

  it('exist for every catalogue event, taking the requested action', () => {
    for (const name of CATALOGUE.keys()) expect(samplePayload(name), name).toBeTypeOf('object');
    expect(samplePayload('issues', 'closed').action).toBe('closed');
    expect(samplePayload('branch_protection_configuration')).toMatchObject({ action: 'created', repository: {}, sender: {} });
  });
});
