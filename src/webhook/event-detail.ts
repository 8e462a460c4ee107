// One event of the catalogue as `webhook events NAME` shows it: the row, and for each action what
// a payload must carry and on whose word (docs/service.md#event-catalogue, #published-schemas).

import { UsageError } from '../errors.js';
import { CATALOGUE, closest, describedAction, eventActions, type EventSpec, type Requirement, requirements } from './catalogue.js';

export interface ActionDetail {
  /** null for an event whose payloads carry no action. */
  action: string | null;
  /** This is the activity the row describes, so the row's list is what it requires. */
  described: boolean;
  /** `action` first, then by name. */
  required: Requirement[];
}

/** The row of `webhook events --json`, with what the row alone does not say. */
export interface EventDetail extends EventSpec {
  /** The action of the activity the row describes; null for an event without actions. */
  described_action: string | null;
  /** Any action is the described activity (a dispatch's action is the dispatcher's event_type). */
  any_action: boolean;
  /** Every action the published schemas know, by name; one entry with `action: null` for an event without actions. */
  actions: ActionDetail[];
}

const HINT = 'run `svc-migrate webhook events` for the catalogue';

/** The catalogue's event of that name; an unknown name is a usage error that suggests the nearest one. */
export function eventDetail(name: string): EventDetail {
  const spec = CATALOGUE.get(name);
  if (!spec) {
    const close = closest(name, [...CATALOGUE.keys()]);
    throw new UsageError(`unknown event "${name}"${close ? `; did you mean "${close}"?` : ''}`, { hint: HINT });
  }
  const described = describedAction(name);
  const anyAction = described === '*';
  const names = spec.action === 'none' ? [] : [...new Set([...eventActions(name), ...(described && !anyAction ? [described] : [])])].sort();
  const actions: ActionDetail[] =
    names.length === 0
      ? [{ action: null, described: true, required: ordered(requirements(spec, undefined)) }]
      : names.map((action) => ({ action, described: anyAction || action === described, required: ordered(requirements(spec, action)) }));
  return { ...spec, described_action: anyAction || described === undefined ? null : described, any_action: anyAction, actions };
}

function ordered(required: Requirement[]): Requirement[] {
  const rank = (requirement: Requirement) => (requirement.property === 'action' ? '' : requirement.property);
  return [...required].sort((a, b) => rank(a).localeCompare(rank(b)));
}

/**
 * The action `--example` asks for, checked against the event: any for a dispatch; none for an
 * event without actions; else one of its actions, a misspelt one with the nearest suggested.
 */
export function exampleAction(detail: EventDetail, action: string | undefined): string | undefined {
  if (action === undefined || detail.any_action) return action;
  const names = detail.actions.flatMap((entry) => (entry.action === null ? [] : [entry.action]));
  if (names.length === 0) {
    throw new UsageError(`--example: ${detail.name} payloads carry no action, so there is no "${action}"`, {
      hint: `give --example alone: svc-migrate webhook events ${detail.name} --example`,
    });
  }
  if (names.includes(action)) return action;
  const close = closest(action, names);
  throw new UsageError(`--example: ${detail.name} has no action "${action}"${close ? ` (did you mean "${close}"?)` : ''}; its actions are ${names.join(', ')}`, {
    hint: `name one of them: svc-migrate webhook events ${detail.name} --example ${close ?? names[0]}`,
  });
}
