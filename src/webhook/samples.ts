import { readFileSync } from 'node:fs';
import { eventSpec } from './catalogue.js';

let bundle: Record<string, Record<string, unknown>> | undefined;

/** Published example payloads, one per event, shipped in samples/ (scripts/build-samples.js). */
function samples(): Record<string, Record<string, unknown>> {
  bundle ??= JSON.parse(readFileSync(new URL('../../samples/webhook-payloads.json', import.meta.url), 'utf8')) as Record<
    string,
    Record<string, unknown>
  >;
  return bundle;
}

/**
 * A payload for `event`: its published example, or one built from the catalogue where there is
 * none. `action` replaces the example's action.
 */
export function samplePayload(event: string, action?: string): Record<string, unknown> {
  const example = samples()[event];
  const spec = eventSpec(event);
  let payload: Record<string, unknown>;
  if (example) payload = structuredClone(example);
  else {
    payload = {};
    for (const property of spec?.required ?? []) payload[property] = property === 'action' ? 'created' : {};
  }
  if (action !== undefined) payload.action = action;
  return payload;
}
