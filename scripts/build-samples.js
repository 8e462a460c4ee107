// Bundles every published example payload (each event, each action) from test/fixtures/webhooks into
// samples/webhook-payloads.json, the built-in payloads of `webhook send`. Run after the fixtures
// change; test/unit/samples.test.ts fails while the bundle is out of date.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../test/fixtures/webhooks/', import.meta.url));
export const BUNDLE = fileURLToPath(new URL('../samples/webhook-payloads.json', import.meta.url));

/**
 * { event: { action or event name: payload } }: every published example, keys sorted, so the
 * sandbox can send the example of the action asked for (the first one is an event's default).
 */
export function collectSamples(dir = FIXTURES) {
  const samples = {};
  for (const event of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort()) {
    samples[event] = {};
    for (const name of readdirSync(join(dir, event)).filter((file) => file.endsWith('.json')).sort()) {
      samples[event][name.slice(0, -'.json'.length)] = JSON.parse(readFileSync(join(dir, event, name), 'utf8'));
    }
  }
  return samples;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(BUNDLE, `${JSON.stringify(collectSamples())}\n`);
  process.stdout.write(`wrote ${BUNDLE}\n`);
}
