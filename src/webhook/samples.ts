import { readFileSync } from 'node:fs';
import { PACKAGE_ROOT } from '../support/package-root.js';
import { actionIsFree, eventSpec } from './catalogue.js';

/**
 * samples/webhook-payloads.json (scripts/build-samples.js): a payload for every event and action
 * the catalogue knows, each valid against GitHub's published schema of that action, with values
 * that recur written once in `shared` and referred to as `{"$shared": index}`.
 */
interface Bundle {
  /** `{ event: { action, or the event's name where it has none: payload } }`. */
  payloads: Record<string, Record<string, unknown>>;
  shared: unknown[];
  /** `"event.action"` → how a payload derived for want of a published example departs from it. */
  adapted: Record<string, string>;
}

let bundle: Bundle | undefined;

function samples(): Bundle {
  bundle ??= JSON.parse(readFileSync(new URL('samples/webhook-payloads.json', PACKAGE_ROOT), 'utf8')) as Bundle;
  return bundle;
}

/** A fresh copy of a bundled value, its shared parts put back. */
function expand(value: unknown, shared: unknown[]): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => expand(item, shared));
  const object = value as Record<string, unknown>;
  if (typeof object.$shared === 'number') return expand(shared[object.$shared], shared);
  return Object.fromEntries(Object.entries(object).map(([key, item]) => [key, expand(item, shared)]));
}

export interface ExamplePayload {
  payload: Record<string, unknown>;
  /** How the payload departs from a published example of that event and action; absent when it does not. */
  adapted?: string;
}

/**
 * A payload for `event` and `action`: the bundle's for that action (a published example, or one
 * derived from the nearest example, which `adapted` says); for an action the published schemas do
 * not know, the event's first payload with its action replaced; for an event without any (one not
 * in the catalogue), one built from the catalogue's required properties, saying so in `adapted`.
 */
export function examplePayload(event: string, action?: string): ExamplePayload {
  const { payloads, shared, adapted } = samples();
  // Own properties only: an event or action named "constructor" is data, never a lookup.
  const examples = Object.hasOwn(payloads, event) ? (payloads[event] as Record<string, unknown>) : {};
  const chosen = action !== undefined && Object.hasOwn(examples, action) ? action : undefined;
  if (chosen !== undefined) {
    const payload = expand(examples[chosen], shared) as Record<string, unknown>;
    const how = adapted[`${event}.${chosen}`];
    return how === undefined ? { payload } : { payload, adapted: how };
  }
  const [first] = Object.keys(examples);
  if (first !== undefined) {
    const payload = expand(examples[first], shared) as Record<string, unknown>;
    if (action === undefined || payload.action === action) {
      const how = adapted[`${event}.${first}`];
      return how === undefined ? { payload } : { payload, adapted: how };
    }
    payload.action = action;
    // A dispatch's action is the dispatcher's event_type: any one is the same activity.
    if (actionIsFree(event)) return { payload };
    return {
      payload,
      adapted: `no published example of ${event} "${action}": the "${first}" example with its action replaced (properties only "${action}" carries are missing)`,
    };
  }
  const payload: Record<string, unknown> = {};
  for (const property of eventSpec(event)?.required ?? []) payload[property] = property === 'action' ? 'created' : {};
  if (action !== undefined) payload.action = action;
  return {
    payload,
    adapted: `no published example of ${event}: built from the catalogue's required properties (empty objects${'action' in payload ? `, action "${String(payload.action)}"` : ''})`,
  };
}

/** `examplePayload(...).payload`: what `webhook send` sends by default. `action` is set even where no example has it. */
export function samplePayload(event: string, action?: string): Record<string, unknown> {
  return examplePayload(event, action).payload;
}
