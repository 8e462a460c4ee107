// The part of JSON Schema the published response schemas (test/fixtures/api/) use: type (one or
// several, "null" included), enum, required, properties, items, anyOf, oneOf. `format` and unknown
// keywords are ignored. Returns the problems found, each with its JSON path; [] means valid.

type Schema = Record<string, any>;

export function schemaProblems(schema: Schema, value: unknown, path = '$'): string[] {
  const problems: string[] = [];
  if (schema.anyOf && !schema.anyOf.some((branch: Schema) => schemaProblems(branch, value, path).length === 0)) {
    problems.push(`${path}: matches no branch of anyOf`);
  }
  if (schema.oneOf) {
    const matching = schema.oneOf.filter((branch: Schema) => schemaProblems(branch, value, path).length === 0).length;
    if (matching !== 1) problems.push(`${path}: matches ${matching} branches of oneOf, not 1`);
  }
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((type) => hasType(value, type))) {
      return [...problems, `${path}: ${JSON.stringify(value)?.slice(0, 60)} is not ${types.join(' or ')}`];
    }
  }
  if (schema.enum && !schema.enum.some((allowed: unknown) => allowed === value)) {
    problems.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in object)) problems.push(`${path}: missing ${key}`);
    for (const [key, child] of Object.entries(schema.properties ?? {})) {
      if (key in object && child) problems.push(...schemaProblems(child, object[key], `${path}.${key}`));
    }
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, index) => problems.push(...schemaProblems(schema.items, item, `${path}[${index}]`)));
  }
  return problems;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    default:
      return typeof value === type;
  }
}
