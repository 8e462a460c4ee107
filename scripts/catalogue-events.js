// The catalogue's event names, read from the rows of src/webhook/catalogue.ts, so the build scripts
// generate data for exactly the events the program knows. Read as text, not imported: the module is
// TypeScript, and it imports src/webhook/shapes.ts, which one of these scripts writes.
import { readFileSync } from 'node:fs';

const SOURCE = new URL('../src/webhook/catalogue.ts', import.meta.url);

export function catalogueEvents() {
  const text = readFileSync(SOURCE, 'utf8');
  const rows = text.slice(text.indexOf('const ROWS: Row[] = ['), text.indexOf('\n];', text.indexOf('const ROWS: Row[] = [')));
  const events = new Set([...rows.matchAll(/^ {2}\['([a-z0-9_]+)', /gm)].map((match) => match[1]));
  if (events.size < 60) throw new Error(`found only ${events.size} events in the rows of ${SOURCE.pathname}; has their layout changed?`);
  return events;
}
