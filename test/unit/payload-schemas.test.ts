import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript development module without types
import { publishedPairs, SCHEMA_CORRECTIONS, schemaProblems } from '../../scripts/webhook-schemas.js';
import { CATALOGUE, cataloguePairs, catalogueWarnings, eventSpec, requiredProperties } from '../../src/webhook/catalogue.js';
import { examplePayload, samplePayload } from '../../src/webhook/samples.js';

interface PublishedPair {
  event: string;
  action?: string;
  component: string;
  required: string[];
  properties: string[];
}

const checkProblems = schemaProblems as (component: string, payload: unknown, options?: { asPublished?: boolean }) => string[];
const PUBLISHED = (publishedPairs() as PublishedPair[]).filter((pair) => CATALOGUE.has(pair.event));
const label = (event: string, action?: string) => (action === undefined ? event : `${event}.${action}`);

/**
 * Where the catalogue's rows (docs/service.md#event-catalogue, the service's word) and GitHub's
 * published schemas disagree about what a payload carries. The spec wins: the receiver warns by the
 * rows, and the payloads `send` and the sandbox use carry what both ask for, so they stay valid
 * against the schema. docs/service.md#published-schemas records the same table.
 */
const SPEC_EXCEPTIONS: { pairs: string[]; property: string; spec: 'optional' | 'required' | 'absent'; why: string }[] = [
  { pairs: ['check_run.completed', 'check_run.created', 'check_run.requested_action', 'check_run.rerequested'], property: 'action', spec: 'optional', why: 'the row lists `action?`' },
  { pairs: ['check_run.completed', 'check_run.created', 'check_run.requested_action', 'check_run.rerequested'], property: 'enterprise', spec: 'absent', why: 'the row\'s deviation `-enterprise`: check_run payloads never carry it' },
  { pairs: ['deployment_protection_rule.requested'], property: 'action', spec: 'optional', why: 'the row lists `action?`' },
  { pairs: ['deployment_protection_rule.requested'], property: 'repository', spec: 'optional', why: 'the row\'s deviation `repository?`' },
  { pairs: ['deployment_protection_rule.requested'], property: 'sender', spec: 'optional', why: 'the row\'s deviation `sender?`' },
  { pairs: ['secret_scanning_alert_location.created'], property: 'action', spec: 'optional', why: 'the row lists `action?`' },
  { pairs: ['label.deleted', 'label.edited'], property: 'sender', spec: 'optional', why: 'the row\'s deviation `sender?` holds for every action' },
  { pairs: ['project_column.moved'], property: 'sender', spec: 'optional', why: 'the row\'s deviation `sender?` holds for every action' },
  { pairs: ['team.created', 'team.edited', 'team.removed_from_repository'], property: 'sender', spec: 'optional', why: 'the row\'s deviation `sender?` holds for every action' },
  { pairs: ['package.updated'], property: 'repository', spec: 'optional', why: 'the row\'s deviation `repository?` holds for every action' },
  {
    pairs: [
      'discussion.unanswered', 'project.deleted', 'project.edited', 'pull_request.demilestoned', 'pull_request.edited', 'pull_request.milestoned',
      'pull_request.unassigned', 'release.edited', 'release.prereleased', 'release.published', 'release.released', 'release.unpublished',
    ],
    property: 'sender',
    spec: 'required',
    why: 'docs/service.md#webhook-envelope: `sender` is required unless the row says otherwise, and these rows do not',
  },
  { pairs: ['personal_access_token_request.created'], property: 'installation', spec: 'required', why: 'the row\'s deviation `installation!` holds for every action' },
];

describe('the catalogue\'s event/action pairs and GitHub\'s published webhook schemas', () => {
  it('the catalogue knows 244 pairs: its events with the actions of the published schemas, each with a schema', () => {
    const pairs = cataloguePairs().map(({ event, action }) => label(event, action));
    expect(pairs).toHaveLength(244);
    expect(pairs.sort()).toEqual(PUBLISHED.map(({ event, action }) => label(event, action)).sort());
  });

  it('every payload `webhook send` sends by default is valid against the published schema of its event and action, and fits the catalogue', () => {
    const failures: string[] = [];
    for (const { event, action, component } of PUBLISHED) {
      const payload = samplePayload(event, action);
      const problems = [
        ...checkProblems(component, payload),
        ...catalogueWarnings(event, payload),
        ...(eventSpec(event)?.absent ?? []).filter((property) => Object.hasOwn(payload, property)).map((property) => `carries ${property}, which the row says it never has`),
      ];
      if (problems.length > 0) failures.push(`${label(event, action)}: ${problems.slice(0, 3).join('; ')}`);
    }
    expect(failures).toEqual([]);
    // ajv compiles 244 schemas: seconds on a busy machine.
  }, 120_000);

  it('each payload is in the state its action leaves things in', () => {
    const stateOf: Record<string, string> = { closed: 'closed', opened: 'open', reopened: 'open' };
    const failures: string[] = [];
    for (const { event, action } of PUBLISHED) {
      const payload = samplePayload(event, action);
      for (const [key, value] of Object.entries(payload)) {
        if (value === null || typeof value !== 'object') continue;
        const object = value as Record<string, unknown>;
        const state = action && stateOf[action];
        if (state && ['open', 'closed'].includes(object.state as string) && object.state !== state) failures.push(`${label(event, action)}: ${key}.state is ${String(object.state)}`);
        if ((action === 'locked' || action === 'unlocked') && typeof object.locked === 'boolean' && object.locked !== (action === 'locked')) {
          failures.push(`${label(event, action)}: ${key}.locked is ${String(object.locked)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    const create = samplePayload('create');
    expect([typeof create.ref, typeof create.master_branch, create.ref_type]).toEqual(['string', 'string', expect.stringMatching(/^(branch|tag)$/)]);
    expect(samplePayload('star', 'deleted').starred_at).toBeNull();
    expect(samplePayload('star', 'created').starred_at).toEqual(expect.any(String));
    expect(samplePayload('milestone', 'opened').milestone).toMatchObject({ state: 'open', closed_at: null });
    expect(samplePayload('issues', 'closed').issue).toMatchObject({ state: 'closed', closed_at: expect.any(String) });
    expect(samplePayload('discussion', 'answered').answer).toMatchObject({ id: expect.any(Number) });
    expect(samplePayload('dependency_alert', 'dismissed').alert).toMatchObject({ state: 'dismissed', dismissed_at: expect.any(String) });
  });

  it('a derived payload carries nothing only the action it was derived from has (an edit\'s `changes` on a close)', () => {
    // The schemas do not forbid other properties, so validity alone lets a leftover through.
    // Each exception is a property the action carries that the published schema does not name.
    const BEYOND_SCHEMA: Record<string, string[]> = {
      // GitHub's project_column event: "the id of the column that this column now follows".
      'project_column.moved': ['after_id'],
    };
    const envelope = ['action', 'repository', 'sender', 'organization', 'installation', 'enterprise'];
    const leftovers: string[] = [];
    for (const { event, action, properties } of PUBLISHED) {
      const { payload, adapted } = examplePayload(event, action);
      if (adapted === undefined) continue;
      const allowed = [...properties, ...envelope, ...(BEYOND_SCHEMA[label(event, action)] ?? [])];
      for (const property of Object.keys(payload)) if (!allowed.includes(property)) leftovers.push(`${label(event, action)}: ${property}`);
    }
    expect(leftovers).toEqual([]);
    expect(samplePayload('discussion', 'closed')).not.toHaveProperty('changes');
    expect(samplePayload('discussion', 'edited').changes).toEqual({ title: { from: expect.any(String) } });
  });

  it('says where a payload was derived for want of a published example, and not otherwise', () => {
    expect(examplePayload('milestone', 'opened').adapted).toMatch(/^no published example of milestone\.opened: derived from the milestone\.closed example; /);
    expect(examplePayload('star', 'deleted').adapted).toBeUndefined();
    expect(examplePayload('issues', 'locked').adapted).toBeUndefined();
    // An action no published schema knows: the first payload with its action set, said so.
    expect(examplePayload('issues', 'frobbed')).toMatchObject({ payload: { action: 'frobbed' }, adapted: expect.stringMatching(/"frobbed"/) });
    // A dispatch's action is the dispatcher's event_type: any one is a published activity.
    expect(examplePayload('repository_dispatch', 'deploy')).toEqual({ payload: expect.objectContaining({ action: 'deploy' }) });
    // Names from outside are never looked up on a prototype.
    expect(examplePayload('constructor').payload).toEqual({});
    expect(examplePayload('issues', 'constructor').payload.action).toBe('constructor');
  });

  it('lists every disagreement between the catalogue\'s rows and the published schemas, each with its reason (the spec wins)', () => {
    const found = new Set<string>();
    for (const { event, action, required, properties } of PUBLISHED) {
      const spec = CATALOGUE.get(event)!;
      const ours = requiredProperties(spec, action);
      for (const property of ours) if (!required.includes(property)) found.add(`${label(event, action)} ${property} required`);
      for (const property of required) if (!ours.includes(property)) found.add(`${label(event, action)} ${property} ${spec.absent.includes(property) ? 'absent' : 'optional'}`);
      for (const property of spec.absent) if (properties.includes(property)) found.add(`${label(event, action)} ${property} absent`);
    }
    const listed = SPEC_EXCEPTIONS.flatMap(({ pairs, property, spec }) => pairs.map((pair) => `${pair} ${property} ${spec}`));
    expect([...found].sort()).toEqual(listed.sort());
    // docs/service.md records each, with the same reason.
    const doc = readFileSync(new URL('../../docs/service.md', import.meta.url), 'utf8');
    for (const { pairs, property, why } of SPEC_EXCEPTIONS) expect(doc, `${pairs.join(', ')} ${property}`).toContain(`| ${pairs.map((pair) => `\`${pair}\``).join(', ')} | \`${property}\` | ${why} |`);
  });

  it('reads the published document as published except where it contradicts itself, and each such correction is still needed', () => {
    for (const { pointer } of SCHEMA_CORRECTIONS as { pointer: string }[]) {
      const property = pointer.split('/').at(-1)!;
      const payload = samplePayload('repository_advisory', 'published');
      expect(checkProblems('webhook-repository-advisory-published', payload)).toEqual([]);
      expect(checkProblems('webhook-repository-advisory-published', payload, { asPublished: true }), pointer).toContain(`/repository_advisory/${property}: must be object`);
    }
  });
});
