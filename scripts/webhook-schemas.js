// GitHub's published webhook schemas (@octokit/openapi-webhooks, its api.github.com document: one
// request body schema per event and action) under the service's names, and an ajv validator for
// each. A development tool only: the build scripts learn from it (src/webhook/shapes.ts, the
// samples bundle) and the tests use it as the oracle the payloads are held to; the product never
// loads it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';

const require = createRequire(import.meta.url);
export const SCHEMA_PACKAGE = '@octokit/openapi-webhooks';
export const SCHEMA_VERSION = require('@octokit/openapi-webhooks/package.json').version;
const DOCUMENT = JSON.parse(readFileSync(require.resolve('@octokit/openapi-webhooks/generated/api.github.com.json'), 'utf8'));

/**
 * Where the published document contradicts itself, so that no payload can be valid, and how it is
 * read instead: a nullable reference written as `type: ["null"]` beside `allOf: [<object schema>]`
 * admits neither null (the allOf wants an object) nor an object (the type wants null). Read as
 * "null, or that object", which the property's description says it is. test/unit/payload-schemas
 * checks that each correction is still needed, so one fixed upstream is noticed and dropped.
 */
export const SCHEMA_CORRECTIONS = [
  { pointer: '/components/schemas/repository-advisory/properties/author', why: 'a nullable simple-user written as type null with allOf simple-user' },
  { pointer: '/components/schemas/repository-advisory/properties/publisher', why: 'a nullable simple-user written as type null with allOf simple-user' },
  { pointer: '/components/schemas/repository-advisory/properties/private_fork', why: 'a nullable simple-repository written as type null with allOf simple-repository' },
];

function at(document, pointer) {
  return pointer.split('/').slice(1).reduce((node, key) => node?.[key], document);
}

/** The document with the corrections applied (or without them, to show they are still needed). */
function corrected(document) {
  const copy = structuredClone(document);
  for (const { pointer } of SCHEMA_CORRECTIONS) {
    const node = at(copy, pointer);
    if (!node || JSON.stringify(node.type) !== '["null"]' || !node.allOf) throw new Error(`${SCHEMA_PACKAGE}: ${pointer} is no longer type null with allOf; review SCHEMA_CORRECTIONS`);
    const { type: _type, allOf, ...rest } = node;
    for (const key of Object.keys(node)) delete node[key];
    Object.assign(node, rest, { anyOf: [{ type: 'null' }, ...allOf] });
  }
  return copy;
}

/** GitHub's event names that the service renames (docs/service.md#delivery-headers). */
export const RENAMED_EVENTS = { dependabot_alert: 'dependency_alert', github_app_authorization: 'service_app_authorization' };

/** The envelope's properties (docs/service.md#webhook-envelope). */
export const ENVELOPE = ['action', 'repository', 'sender', 'organization', 'installation', 'enterprise'];

/**
 * Every published event and action: `{ event, action, component, required, properties }`, `action` undefined
 * where the payload has none. `action` is the value the schema fixes; a dispatch's is the name
 * GitHub gives its example (any string is valid there). `required` holds the top-level properties
 * every variant of the payload has (a `oneOf` of variants, as `review_requested` for a reviewer or
 * a team, requires what all of them require); `properties` all the top-level properties any variant has.
 */
export function publishedPairs() {
  const pairs = [];
  for (const [key, { post }] of Object.entries(DOCUMENT.webhooks)) {
    const github = post['x-github'].subcategory;
    const ref = post.requestBody.content['application/json'].schema.$ref;
    const component = ref.slice('#/components/schemas/'.length);
    const variants = DOCUMENT.components.schemas[component].oneOf ?? [DOCUMENT.components.schemas[component]];
    const fixed = variants[0].properties?.action?.enum;
    const action = fixed?.[0] ?? (variants[0].properties?.action ? key.slice(`${github.replace(/_/g, '-')}-`.length) : undefined);
    const required = variants.map((variant) => variant.required ?? []).reduce((all, some) => all.filter((name) => some.includes(name)));
    const properties = [...new Set(variants.flatMap((variant) => Object.keys(variant.properties ?? {})))].sort();
    pairs.push({ event: RENAMED_EVENTS[github] ?? github, action, component, required: [...required].sort(), properties });
  }
  return pairs.sort((a, b) => a.event.localeCompare(b.event) || (a.action ?? '').localeCompare(b.action ?? ''));
}

// RFC 3339 as the schemas' examples write it; the other formats are checked for their shape only.
const FORMATS = {
  'date-time': /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  uri: /^[A-Za-z][A-Za-z0-9+.-]*:\S*$/,
  email: /^[^\s@]+@[^\s@]+$/,
};

const validators = new Map();

/**
 * ajv in strict mode over the whole document. `strictTypes` is off because the document puts
 * `minItems` beside `type: string` (an authoring slip that constrains nothing); it governs how
 * ajv reads the schemas, not what the payloads must be. `example` (OpenAPI's) is an annotation;
 * `int64` and `uri-template` are annotations too (an id is any integer, a template any string).
 * References are compiled once each rather than inlined: a third of the time over 244 schemas.
 */
function validator(asPublished) {
  if (validators.has(asPublished)) return validators.get(asPublished);
  const ajv = new Ajv2020.default({ strict: true, strictTypes: false, allowUnionTypes: true, allErrors: true, inlineRefs: false });
  ajv.addKeyword('example');
  ajv.addKeyword('components');
  for (const [name, pattern] of Object.entries(FORMATS)) ajv.addFormat(name, pattern);
  for (const name of ['int64', 'uri-template']) ajv.addFormat(name, true);
  ajv.addSchema({ $id: 'webhooks', components: (asPublished ? DOCUMENT : corrected(DOCUMENT)).components });
  validators.set(asPublished, ajv);
  return ajv;
}

/** ajv's errors for `payload` against the schema of `component` ([] when it is valid); `asPublished`: without SCHEMA_CORRECTIONS. */
export function schemaErrors(component, payload, { asPublished = false } = {}) {
  const ajv = validator(asPublished);
  const id = `webhooks#/components/schemas/${component}`;
  const validate = ajv.getSchema(id) ?? ajv.compile({ $ref: id });
  return validate(payload) ? [] : validate.errors;
}

/** The problems of `payload` against the schema of `component` ([] when it is valid), each "path: message". */
export function schemaProblems(component, payload, options) {
  return schemaErrors(component, payload, options).map(
    (error) => `${error.instancePath || '/'}: ${error.message}${error.params?.allowedValues ? ` ${JSON.stringify(error.params.allowedValues)}` : ''}`,
  );
}

/** The schema of a component, for the sample builder to read `examples` and types from. */
export function componentSchema(component) {
  return DOCUMENT.components.schemas[component];
}
