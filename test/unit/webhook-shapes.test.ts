import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript build script without types
import { collectShapes, OUTPUT, renderShapes } from '../../scripts/build-webhook-shapes.js';
import { CATALOGUE, requiredProperties } from '../../src/webhook/catalogue.js';
import { PUBLISHED_SHAPES } from '../../src/webhook/shapes.js';

describe('what every action of an event carries, learned from test/fixtures/webhooks', () => {
  it('is up to date (run `node scripts/build-webhook-shapes.js` when this fails)', () => {
    expect(readFileSync(OUTPUT, 'utf8')).toBe(renderShapes(collectShapes()));
  });

  it('names only catalogue events, and narrows the required list only for actions other than the shown one', () => {
    for (const event of PUBLISHED_SHAPES.keys()) expect(CATALOGUE.has(event), event).toBe(true);
    const pr = CATALOGUE.get('pull_request')!;
    expect(requiredProperties(pr, 'assigned')).toContain('assignee');
    expect(requiredProperties(pr, 'opened')).toEqual(expect.arrayContaining(['action', 'number', 'pull_request', 'repository', 'sender']));
    expect(requiredProperties(pr, 'opened')).not.toContain('assignee');
    // Without a published payload, another action keeps the envelope's part of the row.
    const configuration = CATALOGUE.get('branch_protection_configuration')!;
    expect(requiredProperties(configuration, 'enabled').sort()).toEqual(['action', 'repository', 'sender']);
    // A dispatch's action is the dispatcher's choice: every one is the shown activity.
    expect(requiredProperties(CATALOGUE.get('repository_dispatch')!, 'anything')).toEqual(CATALOGUE.get('repository_dispatch')!.required);
  });
});
