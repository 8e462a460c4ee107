import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript build script without types
import { collectShapes, OUTPUT, renderShapes } from '../../scripts/build-webhook-shapes.js';
import { actionIsFree, CATALOGUE, eventActions, requirements, requiredProperties } from '../../src/webhook/catalogue.js';
import { PUBLISHED_ACTIONS } from '../../src/webhook/shapes.js';

const spec = (name: string) => CATALOGUE.get(name)!;

describe('what each action of an event requires, learned from GitHub\'s published schemas', () => {
  it('is up to date (run `node scripts/build-webhook-shapes.js` when this fails)', () => {
    expect(readFileSync(OUTPUT, 'utf8')).toBe(renderShapes(collectShapes()));
  });

  it('covers exactly the catalogue\'s events, with their published actions', () => {
    expect([...PUBLISHED_ACTIONS.keys()].sort()).toEqual([...CATALOGUE.keys()].sort());
    expect(eventActions('issues')).toEqual(expect.arrayContaining(['closed', 'locked', 'opened', 'typed']));
    expect(eventActions('push')).toEqual([]);
    expect(eventActions('nope')).toEqual([]);
    expect(actionIsFree('repository_dispatch')).toBe(true);
    expect(actionIsFree('issues')).toBe(false);
  });

  it('keeps the row for the activity it describes, and learns every other action from its published schema', () => {
    // projects_v2_item: the row's `changes` belongs to archived, the activity it describes.
    expect(requiredProperties(spec('projects_v2_item'), 'archived')).toContain('changes');
    expect(requiredProperties(spec('projects_v2_item'), 'created')).not.toContain('changes');
    expect(requiredProperties(spec('projects_v2_item'), 'created')).toEqual(expect.arrayContaining(['projects_v2_item', 'organization', 'sender', 'action']));
    // The event's main object, for actions the rows do not describe.
    expect(requiredProperties(spec('issues'), 'closed')).toEqual(expect.arrayContaining(['issue', 'repository', 'sender', 'action']));
    expect(requiredProperties(spec('project_card'), 'created')).toContain('project_card');
    expect(requiredProperties(spec('projects_v2'), 'edited')).toEqual(expect.arrayContaining(['projects_v2', 'changes']));
    expect(requiredProperties(spec('pull_request'), 'opened')).not.toContain('assignee');
    expect(requiredProperties(spec('pull_request'), 'assigned')).toContain('assignee');
    // The row still rules the envelope for every action: label events may come without a sender,
    // release events may not, whatever one published schema says.
    expect(requiredProperties(spec('label'), 'deleted')).not.toContain('sender');
    expect(requiredProperties(spec('release'), 'published')).toContain('sender');
    expect(requiredProperties(spec('projects_v2'), 'created')).not.toContain('repository');
    // An action no published schema knows: what every published action of the event requires.
    expect(requiredProperties(spec('issues'), 'frobbed').sort()).toEqual(['action', 'issue', 'repository', 'sender']);
    // A dispatch's action is the dispatcher's choice: every one is the row's activity.
    expect(requiredProperties(spec('repository_dispatch'), 'anything')).toEqual(spec('repository_dispatch').required);
  });

  it('says where each required property comes from', () => {
    expect(requirements(spec('issues'), 'closed')).toEqual(
      expect.arrayContaining([{ property: 'sender', source: 'spec' }, { property: 'issue', source: 'published' }]),
    );
    expect(requirements(spec('issues'), 'assigned').every((requirement) => requirement.source === 'spec')).toBe(true);
    expect(requirements(spec('push'), undefined).every((requirement) => requirement.source === 'spec')).toBe(true);
  });
});
