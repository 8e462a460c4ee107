// Fields the published schemas require today that older published examples were written without,
// and values those examples hold in a form the schemas no longer take. Each is filled with the value
// the rest of the object implies (a repository without `has_discussions` had no discussions; a
// release without `updated_at` was last updated when it was published), never a guess the schema
// alone would accept. scripts/build-samples.js applies them; a field missing here fails the build.

/** A GitHub node id: base64 of "<length of the type>:<type><id>", as the published examples show. */
export function nodeId(type, id) {
  return Buffer.from(`0${type.length}:${type}${id}`).toString('base64');
}

const isoDate = (seconds) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/**
 * Missing required properties: `name` or `parent.name` (the key of the object that holds it) → the
 * value, from that object and the whole payload.
 */
export const MISSING = {
  has_discussions: () => false,
  disabled: () => false,
  lock_branch_enforcement_level: () => 'off',
  // A discussion closes with a reason; an open, locked or transferred one has none.
  state_reason: (discussion) => (discussion.state === 'closed' ? 'resolved' : null),
  immutable: () => false,
  'release.updated_at': (release) => release.published_at ?? release.created_at,
  verified_at: (verification) => (verification.verified ? '2019-05-15T15:19:25Z' : null),
  app_slug: (installation) => installation.html_url?.match(/\/apps\/([^/]+)/)?.[1] ?? 'octoapp',
  'sender.node_id': (user) => nodeId('User', user.id),
  'check_run.node_id': (run) => nodeId('CheckRun', run.id),
  'check_run.details_url': (run) => run.html_url,
  'app.permissions': () => ({ checks: 'write', metadata: 'read' }),
  'app.events': () => ['check_run', 'check_suite'],
  'workflow_run.path': (run) => `.github/workflows/${run.name.replace(/\W+/g, '-').toLowerCase()}.yml`,
  'workflow_run.display_title': (run) => run.head_commit?.message?.split('\n')[0] ?? run.name,
};

/** Values in a form the schemas no longer take → the same value in the form they take; undefined: not ours to change. */
export function convert(value, keyword, property) {
  // Apps' timestamps were once "2018-04-25 20:42:10" (UTC), installations' epoch seconds.
  if ((keyword === 'format' || keyword === 'type') && /_at$/.test(property)) {
    if (typeof value === 'number') return isoDate(value);
    if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}( UTC)?$/.test(value)) return `${value.slice(0, 10)}T${value.slice(11, 19)}Z`;
  }
  // A repository without a homepage: "" then, null now.
  if (keyword === 'format' && property === 'homepage' && value === '') return null;
  // Marketplace plans: "per-unit" then, "PER_UNIT" now.
  if (keyword === 'enum' && property === 'price_model' && typeof value === 'string') return value.toUpperCase().replace(/-/g, '_');
  return undefined;
}
