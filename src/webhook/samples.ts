import { readFileSync } from 'node:fs';
import { PACKAGE_ROOT } from '../package-root.js';
import { eventSpec } from './catalogue.js';

type Examples = Record<string, Record<string, Record<string, unknown>>>;
let payloads: Examples | undefined;

/**
 * Published example payloads, every action of every event, shipped in samples/
 * (scripts/build-samples.js): `{ event: { action, or the event's name where it has none: payload } }`.
 */
function samples(): Examples {
  payloads ??= JSON.parse(readFileSync(new URL('samples/webhook-payloads.json', PACKAGE_ROOT), 'utf8')) as Examples;
  return payloads;
}

export interface ExamplePayload {
  payload: Record<string, unknown>;
  /** How the payload departs from a published example of that event and action; absent when it does not. */
  adapted?: string;
}

/**
 * A payload for `event` and `action`: the published example of that action when there is one;
 * otherwise the event's first example with its action replaced, or (no example at all) one built
 * from the catalogue's required properties, saying so in `adapted`.
 */
export function examplePayload(event: string, action?: string): ExamplePayload {
  const examples = samples()[event] ?? {};
  if (action !== undefined && examples[action]) return { payload: structuredClone(examples[action]) };
  const [first] = Object.keys(examples);
  if (first !== undefined) {
    const payload = structuredClone(examples[first] as Record<string, unknown>);
    if (action === undefined || payload.action === action) return { payload };
    payload.action = action;
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
