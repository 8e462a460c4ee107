// Builds samples/webhook-payloads.json, the payloads `webhook send` and the sandbox send by default:
// one for every event and action the catalogue knows (its events × the actions of GitHub's published
// schemas, scripts/webhook-schemas.js), each valid against the published schema of that action.
// Where a published example of the action exists (test/fixtures/webhooks, then the api.github.com
// set of @octokit/webhooks-examples), the one the schema finds least fault with is taken, and fields the
// schema added since are filled from what the rest of it says (scripts/sample-fills.js). Where
// none exists, the payload is derived from the nearest example with what the action implies
// (scripts/sample-derivations.js). Run after either changes, or after the packages are updated:
// test/unit/samples.test.ts fails while the bundle is out of date, and the build fails on a payload
// the schema still rejects.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalogueEvents } from './catalogue-events.js';
import { DERIVED } from './sample-derivations.js';
import { convert, MISSING } from './sample-fills.js';
import { ENVELOPE, publishedPairs, RENAMED_EVENTS, schemaErrors, schemaProblems } from './webhook-schemas.js';

const require = createRequire(import.meta.url);
export const FIXTURES = fileURLToPath(new URL('../test/fixtures/webhooks/', import.meta.url));
export const BUNDLE = fileURLToPath(new URL('../samples/webhook-payloads.json', import.meta.url));
const EXAMPLES = '@octokit/webhooks-examples';
const EXAMPLES_VERSION = require('@octokit/webhooks-examples/package.json').version;
/**
 * The examples of api.github.com: the Enterprise Server sets of the package describe older servers
 * (a `deployment` without `action`, say), not the service.
 */
const EXAMPLE_SET = 'api.github.com';
const UPSTREAM = Object.fromEntries(Object.entries(RENAMED_EVENTS).map(([github, ours]) => [ours, github]));

let examples;
/** @octokit/webhooks-examples' api.github.com set: `[{ name: GitHub's event name, examples: [payload] }]`. */
export function publishedExampleSet() {
  examples ??= JSON.parse(readFileSync(require.resolve('@octokit/webhooks-examples/api.github.com/index.json'), 'utf8'));
  return examples;
}

/** Published examples of the pair, in order of preference; `anyAction`: a dispatch's, whose action is free. */
function publishedExamples(event, action, anyAction) {
  const found = [];
  const fixture = join(FIXTURES, event, `${action ?? event}.json`);
  if (!anyAction && existsSync(fixture)) {
    found.push({ source: `test/fixtures/webhooks/${event}/${action ?? event}.json`, payload: JSON.parse(readFileSync(fixture, 'utf8')) });
  }
  const upstream = UPSTREAM[event] ?? event;
  for (const entry of publishedExampleSet().filter((candidate) => candidate.name === upstream)) {
    entry.examples.forEach((payload, index) => {
      if (anyAction || payload.action === action) found.push({ source: `${EXAMPLES}@${EXAMPLES_VERSION} ${EXAMPLE_SET} ${upstream} #${index}`, payload });
    });
  }
  return found;
}

/** The object at a JSON pointer of ajv's, and the key it sits under. */
function locate(payload, pointer) {
  const keys = pointer.split('/').slice(1).map((key) => key.replace(/~1/g, '/').replace(/~0/g, '~'));
  let holder = payload;
  for (const key of keys) holder = holder?.[key];
  return { holder, key: keys.at(-1) ?? '' };
}

/**
 * Fills what the schema requires and the payload lacks, and converts values to the form the schema
 * takes, as scripts/sample-fills.js says; returns what was changed and the problems left.
 */
function complete(component, payload) {
  const changed = new Set();
  for (let round = 0; round < 10; round++) {
    const errors = schemaErrors(component, payload);
    let progress = false;
    for (const error of errors) {
      if (error.keyword === 'required') {
        const { holder, key } = locate(payload, error.instancePath);
        const name = error.params.missingProperty;
        const fill = MISSING[`${key}.${name}`] ?? MISSING[name];
        if (!fill || !holder || typeof holder !== 'object' || Object.hasOwn(holder, name)) continue;
        holder[name] = fill(holder, payload);
        changed.add(name);
        progress = true;
      } else {
        const { holder: parent } = locate(payload, error.instancePath.split('/').slice(0, -1).join('/'));
        const { key } = locate(payload, error.instancePath);
        if (!parent || typeof parent !== 'object') continue;
        const value = convert(parent[key], error.keyword, key);
        if (value === undefined || value === parent[key]) continue;
        parent[key] = value;
        changed.add(key);
        progress = true;
      }
    }
    if (!progress) break;
  }
  return { changed: [...changed].sort(), problems: schemaProblems(component, payload) };
}

const label = (event, action) => (action === undefined ? event : `${event}.${action}`);

/**
 * { payloads: { event: { action, or the event's name where it has none: payload } }, adapted: {
 * "event.action": how a derived payload departs from its example }, sources: { "event.action":
 * where each payload comes from } }.
 */
export function buildSamples() {
  const events = catalogueEvents();
  const pairs = publishedPairs().filter((pair) => events.has(pair.event));
  const byLabel = new Map(pairs.map((pair) => [label(pair.event, pair.action), pair]));
  const built = new Map();
  const failures = [];

  /** The payload of one pair, with where it comes from and, when derived, how. */
  function derive(name, pair) {
    const anyAction = pair.event === 'repository_dispatch';
    const examples = publishedExamples(pair.event, pair.action, anyAction).map((example) => ({
      ...example,
      faults: schemaErrors(pair.component, example.payload).length,
    }));
    const best = examples.reduce((chosen, example) => (!chosen || example.faults < chosen.faults ? example : chosen), undefined);
    if (best) {
      const payload = structuredClone(best.payload);
      return { key: anyAction ? payload.action : pair.action ?? pair.event, payload, source: best.source };
    }
    const rule = DERIVED[name];
    if (!rule) {
      failures.push(`${name}: no published example, and scripts/sample-derivations.js does not say how to derive one`);
      return { key: pair.action, payload: {}, source: '' };
    }
    const base = structuredClone(sample(rule.from).payload);
    const inherited = Object.keys(base);
    base.action = pair.action;
    const payload = rule.apply?.(base, (other) => structuredClone(sample(other).payload)) ?? base;
    // What only the example's action carries (an edit's `changes` on a close) is a leftover: the
    // schemas allow any other property, so only their names tell it apart. What the rule adds stays.
    for (const property of inherited) if (!pair.properties.includes(property) && !ENVELOPE.includes(property)) delete payload[property];
    return { key: pair.action, payload, source: `derived from the ${rule.from} example`, adapted: `no published example of ${name}: derived from the ${rule.from} example; ${rule.note}` };
  }

  function sample(name) {
    if (!built.has(name)) {
      const pair = byLabel.get(name);
      if (!pair) throw new Error(`${name}: not a published event and action of the catalogue`);
      const result = derive(name, pair);
      const { changed, problems } = complete(pair.component, result.payload);
      if (changed.length > 0) result.source += `; filled or updated for the current schema: ${changed.join(', ')}`;
      if (problems.length > 0) failures.push(`${name} (${result.source}):\n    ${problems.join('\n    ')}`);
      built.set(name, result);
    }
    return built.get(name);
  }

  const payloads = {};
  const adapted = {};
  const sources = {};
  for (const pair of pairs) {
    const { key, payload, source, adapted: how } = sample(label(pair.event, pair.action));
    const name = label(pair.event, pair.action === undefined ? undefined : key);
    (payloads[pair.event] ??= {})[key] = payload;
    sources[name] = source;
    if (how) adapted[name] = how;
  }
  if (failures.length > 0) throw new Error(`payloads the published schema rejects:\n  ${failures.join('\n  ')}`);
  for (const event of Object.keys(payloads)) {
    payloads[event] = Object.fromEntries(Object.entries(payloads[event]).sort(([a], [b]) => a.localeCompare(b)));
  }
  return { payloads, adapted, sources };
}

const mapValues = (object, map) => Object.fromEntries(Object.entries(object).map(([key, value]) => [key, map(value)]));

/** The marker of a shared value in the bundle; no published payload has a key of that name. */
const SHARED = '$shared';
/** Values shorter than this (as JSON) are written where they occur. */
const SHARED_MIN_LENGTH = 200;

/**
 * The bundle as written: the same repository, sender or pull request recurs in dozens of payloads
 * (a derived payload is mostly its example's), so each object or array of at least 200 characters
 * that occurs more than once is written once in `shared` and replaced by `{"$shared": index}`
 * wherever it occurs, shared values included. src/webhook/samples.ts puts them back.
 */
export function renderSamples({ payloads, adapted }) {
  const seen = new Map();
  const visit = (value, top) => {
    if (value === null || typeof value !== 'object') return;
    if (!Array.isArray(value) && Object.hasOwn(value, SHARED)) throw new Error(`a payload has a "${SHARED}" key, which the bundle uses as its marker`);
    const text = JSON.stringify(value);
    if (!top && text.length >= SHARED_MIN_LENGTH) seen.set(text, (seen.get(text) ?? 0) + 1);
    for (const child of Object.values(value)) visit(child, false);
  };
  for (const actions of Object.values(payloads)) for (const payload of Object.values(actions)) visit(payload, true);
  const candidates = new Set([...seen].filter(([, count]) => count > 1).map(([text]) => text));
  // Replace from the outside in; then inline what ended up referred to only once.
  const references = new Map();
  const squeeze = (value, top) => {
    if (value === null || typeof value !== 'object') return value;
    const text = JSON.stringify(value);
    if (!top && candidates.has(text)) {
      if (!references.has(text)) references.set(text, { count: 0, value: squeeze(value, true) });
      references.get(text).count++;
      return { [SHARED]: text };
    }
    return Array.isArray(value) ? value.map((child) => squeeze(child, false)) : mapValues(value, (child) => squeeze(child, false));
  };
  const squeezed = mapValues(payloads, (actions) => mapValues(actions, (payload) => squeeze(payload, true)));
  const index = new Map();
  const shared = [];
  const link = (value) => {
    if (value === null || typeof value !== 'object') return value;
    if (!Array.isArray(value) && typeof value[SHARED] === 'string') {
      const entry = references.get(value[SHARED]);
      if (entry.count === 1) return link(entry.value);
      if (!index.has(value[SHARED])) {
        index.set(value[SHARED], shared.length);
        shared.push(null);
        shared[index.get(value[SHARED])] = link(entry.value);
      }
      return { [SHARED]: index.get(value[SHARED]) };
    }
    return Array.isArray(value) ? value.map(link) : mapValues(value, link);
  };
  const linked = link(squeezed);
  return `${JSON.stringify({ adapted, shared, payloads: linked })}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const samples = buildSamples();
  const text = renderSamples(samples);
  writeFileSync(BUNDLE, text);
  for (const [name, source] of Object.entries(samples.sources)) process.stdout.write(`${name}: ${source}\n`);
  process.stdout.write(`wrote ${BUNDLE} (${Object.keys(samples.sources).length} payloads, ${text.length} bytes)\n`);
}
