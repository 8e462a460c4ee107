// Bundles one published example payload per event from test/fixtures/webhooks into
// samples/webhook-payloads.json, the built-in payloads of `webhook send`. Run after the fixtures
// change; test/unit/samples.test.ts fails while the bundle is out of date.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../test/fixtures/webhooks/', import.meta.url));
export const BUNDLE = fileURLToPath(new URL('../samples/webhook-payloads.json', import.meta.url));

/** { event: { action or event name: payload } } for the first example of each event. */
export function collectSamples(dir = FIXTURES) {
  const samples = {};
  for (const event of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort()) {
    const [first] = readdirSync(join(dir, event)).filter((name) => name.endsWith('.json')).sort();
    if (first) samples[event] = JSON.parse(readFileSync(join(dir, event, first), 'utf8'));
  }
  return samples;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(BUNDLE, `${JSON.stringify(collectSamples())}\n`);
  process.stdout.write(`wrote ${BUNDLE}\n`);
}
