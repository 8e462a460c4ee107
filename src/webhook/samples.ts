import { readFileSync } from 'node:fs';
import { PACKAGE_ROOT } from '../package-root.js';
import { eventSpec } from './catalogue.js';

let payloads: Record<string, Record<string, unknown>> | undefined;

/** Published example payloads, one per event, shipped in samples/ (scripts/build-samples.js). */
function samples(): Record<string, Record<string, unknown>> {
  payloads ??= JSON.parse(readFileSync(new URL('samples/webhook-payloads.json', PACKAGE_ROOT), 'utf8')) as Record<
    string,
    Record<string, unknown>
  >;
  return payloads;
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
