// The event catalogue (docs/service.md#event-catalogue) as data, written once; rows keep the
// service's wording. `props` lists each event's own properties (`name!` required, `name?` optional,
// `action` included when the event carries one) and `dev` its deviations from the common rule of
// docs/service.md#webhook-envelope: `repository` and `sender` required, `enterprise`,
// `installation`, `organization` optional. In `dev`, `name?` makes a common property optional,
// `name!` required, and `-name` means the payload has none.

import { PUBLISHED_ACTIONS } from './shapes.js';

type Presence = 'required' | 'optional';

export interface EventSpec {
  name: string;
  permission: string;
  availability: string[];
  activity: string;
  /** Whether payloads carry `action`, and whether it is required. */
  action: Presence | 'none';
  /** Properties (own and common after deviations) a payload must have. */
  required: string[];
  optional: string[];
  /** Common properties the event never carries. */
  absent: string[];
  deviations: string[];
  beta: boolean;
  deprecated: boolean;
}

type Row = [name: string, permission: string, availability: string, activity: string, props: string, dev?: string];

const ROWS: Row[] = [
  ['branch_protection_configuration', 'Administration (repository)', 'Rep Org App', 'all branch protections disabled for a repository', 'action!'],
  ['branch_protection_rule', 'Administration (repository)', 'Rep Org App', 'rule created', 'action! rule!'],
  ['check_run', 'Checks (repository)', 'Rep Org App', 'check run completed, conclusion available', 'action? check_run!', '-enterprise'],
  ['check_suite', 'Checks', 'Rep Org App', 'all check runs completed, conclusion available', 'action! check_suite!'],
  ['code_scanning_alert', 'Code scanning alerts', 'Rep Org App', 'existing alert appeared in another branch', 'action! alert! commit_oid! ref!'],
  ['commit_comment', 'Contents', 'Rep Org App', 'comment on a commit', 'action! comment!'],
  ['create', 'Contents', 'Rep Org App', 'branch or tag created', 'description! master_branch! pusher_type! ref! ref_type!'],
  ['delete', 'Contents', 'Rep Org App', 'branch or tag deleted; push covers all pushes including deletions', 'pusher_type! ref! ref_type!'],
  ['dependency_alert', 'Dependency alerts', 'Rep Org App', 'alert automatically closed', 'action! alert!'],
  ['deploy_key', 'Deployments', 'Rep Org App', 'deploy key created', 'action! key!'],
  ['deployment', 'Deployments', 'Rep Org App', 'deployment created', 'action! deployment! workflow! workflow_run!'],
  ['deployment_protection_rule', 'Deployments', 'App', 'protection rule requested for an environment', 'action? environment? event? deployment_callback_url? deployment? pull_requests?', 'repository? organization? installation? sender?'],
  ['deployment_review', 'Deployments', 'App', 'deployment review approved', 'action! approver? comment? reviewers? since! workflow_job_run? workflow_job_runs? workflow_run!', 'organization!'],
  ['deployment_status', 'Deployments', 'Rep Org App', 'new deployment status created', 'action! check_run? deployment! deployment_status! workflow? workflow_run?'],
  ['discussion', 'Discussions', 'Rep Org App', 'comment marked as the answer', 'action! answer! discussion!'],
  ['discussion_comment', 'Discussions', 'Rep Org App', 'comment created', 'action! comment! discussion!'],
  ['fork', 'Contents', 'Ent Rep Org App', 'repository forked', 'forkee!'],
  ['service_app_authorization', 'none stated', 'App', 'user revoked authorization of the app', 'action!', 'repository?'],
  ['gollum', 'Contents', 'Rep Org App', 'wiki page created or updated', 'pages!'],
  ['installation', 'none stated', 'App', 'app installed on a user or organization account', 'action! installation! repositories? requester?', 'repository?'],
  ['installation_repositories', 'none stated', 'App', 'installation granted access to repositories', 'action! installation! repositories_added! repositories_removed! repository_selection! requester!', 'repository?'],
  ['installation_target', 'none stated', 'App', 'account the app is installed on was renamed', 'account! action! changes! installation! target_type!', 'repository? sender?'],
  ['issue_comment', 'Issues', 'Rep Org App', 'comment on an issue or pull request created', 'action! comment! issue!'],
  ['issues', 'Issues', 'Rep Org App', 'issue assigned to a user', 'action! assignee? issue!'],
  ['label', 'Metadata', 'Rep Org App', 'label created', 'action! label!', 'sender?'],
  ['marketplace_purchase', 'none stated', 'Mkt', 'plan cancelled and last billing cycle ended; takes effect immediately', 'action! effective_date! marketplace_purchase! previous_marketplace_purchase?', 'repository?'],
  ['member', 'Members (organization)', 'Ent Rep Org App', 'user accepted an invitation to a repository', 'action! changes? member!'],
  ['membership', 'Members (organization)', 'Org Ent App', 'organization member added to a team', 'action! member! scope! sender! team!', 'organization! repository?'],
  ['merge_group', 'Merge queues', 'App', 'status checks requested for a merge group', 'action! merge_group!', 'repository? sender?'],
  ['meta', 'Meta (app)', 'Mkt Ent Rep Org App', 'webhook deleted', 'action! hook! hook_id!', 'repository? sender?'],
  ['milestone', 'Issues or Pull requests', 'Rep Org App', 'milestone closed', 'action! milestone!'],
  ['org_block', 'Administration (organization)', 'Org Ent App', 'user blocked from the organization', 'action! blocked_user!', 'organization! repository?'],
  ['organization', 'Members (organization)', 'Org Ent App', 'organization deleted', 'action! membership?', 'organization! repository?'],
  ['package', 'Packages (repository)', 'Rep Org App', 'package published to a registry', 'action! package!', 'repository?'],
  ['page_build', 'Pages', 'Rep Org App', 'build attempted, whether or not successful', 'build! id!'],
  ['personal_access_token_request', 'Personal access token requests (organization)', 'App', 'fine-grained token request approved', 'action! personal_access_token_request!', 'organization! sender! installation! -repository'],
  ['ping', 'none stated', 'Rep Org App Ent Mkt', 'webhook created', 'hook? hook_id? zen?', 'repository? sender?'],
  ['project_card', 'Projects', 'Rep Org App', 'note in a classic project converted to an issue', 'action! changes! project_card!', 'repository?'],
  ['project', 'Projects', 'Rep Org App', 'classic project closed', 'action! project!', 'repository?'],
  ['project_column', 'Projects', 'Rep Org App', 'column added to a classic project', 'action! project_column!', 'repository? sender?'],
  ['projects_v2', 'Projects (organization)', 'Org', 'project closed', 'action! projects_v2!', 'organization! -repository'],
  ['projects_v2_item', 'Projects (organization)', 'Org', 'item archived', 'action! changes! projects_v2_item!', 'organization! -repository'],
  ['public', 'Metadata', 'Rep Org App', 'repository visibility changed from private to public', ''],
  ['pull_request', 'Pull requests', 'Rep Org App', 'pull request assigned to a user', 'action! assignee! number! pull_request!'],
  ['pull_request_review_comment', 'Pull requests', 'Rep Org App', 'comment on a pull request diff created', 'action! comment! pull_request!'],
  ['pull_request_review', 'Pull requests', 'Rep Org App', 'review dismissed', 'action! pull_request! review!'],
  ['pull_request_review_thread', 'Pull requests', 'Rep Org App', 'comment thread marked resolved', 'action! pull_request! thread!', 'sender?'],
  ['push', 'Contents', 'Rep Org App', 'push to a branch, including tag pushes, branch or tag deletion, repository created from a template', 'after! base_ref! before! commits! compare! created! deleted! forced! head_commit! pusher! ref!', 'sender?'],
  ['registry_package', 'Packages (repository)', 'Rep Org App', 'package published to a registry', 'action! registry_package!', 'repository?'],
  ['release', 'Contents', 'Rep Org App', 'draft saved, or release or pre-release published without a prior draft', 'action! release!'],
  ['repository_advisory', 'Repository security advisories', 'Rep Org App', 'advisory published', 'action! repository_advisory!', 'sender?'],
  ['repository', 'Metadata', 'Ent Rep Org App', 'repository archived', 'action!'],
  ['repository_dispatch', 'Contents', 'App', 'dispatch request received; action equals the request\'s event_type', 'action! branch! client_payload!', 'installation!'],
  ['repository_import', 'none stated', 'Rep Org', 'repository imported', 'status!'],
  ['repository_ruleset', 'Administration (repository)', 'Rep Org App', 'ruleset created', 'action! repository_ruleset!', 'repository?'],
  ['repository_vulnerability_alert', 'none stated', 'Rep Org', 'deprecated; vulnerability alert created', 'action! alert!'],
  ['secret_scanning_alert', 'Secret scanning alerts', 'Rep Org App', 'alert created', 'action! alert!', 'sender?'],
  ['secret_scanning_alert_location', 'Secret scanning alerts', 'Rep Org App', 'new instance of an already detected secret; its location added to the existing alert', 'action? alert! location!'],
  ['security_advisory', 'none stated', 'App', 'advisory published to the community', 'action! security_advisory!', 'repository? sender?'],
  ['security_and_analysis', 'Administration (repository)', 'Rep Org App', 'security features enabled or disabled', 'changes!', 'sender?'],
  ['sponsorship', 'none stated', 'Spn', 'recurring sponsorship cancelled and last billing cycle ended; not sent for one-time sponsorships', 'action! sponsorship!', 'repository?'],
  ['star', 'Metadata', 'Rep Org App', 'repository starred', 'action! starred_at!'],
  ['status', 'Commit statuses', 'Rep Org App', 'commit status changed', 'avatar_url? branches! commit! context! created_at! description! id! name! sha! state! target_url! updated_at!'],
  ['team_add', 'Members (organization)', 'Rep Org App', 'team added to a repository', 'team!'],
  ['team', 'Members (organization)', 'Org Ent App', 'team granted access to a repository', 'action! team!', 'organization! repository? sender?'],
  ['watch', 'Metadata', 'Rep Org App', 'someone started watching', 'action!'],
  ['workflow_dispatch', 'Contents', 'App', 'workflow triggered manually', 'inputs! ref! workflow!'],
  ['workflow_job', 'Actions', 'Ent Rep Org App', 'job finished, successful or not', 'action! workflow_job! deployment?'],
  ['workflow_run', 'Actions', 'Ent Rep Org App', 'workflow run finished, successful or not', 'action! workflow! workflow_run!'],
];

/** docs/service.md#delivery-rules rule 9 and 10. */
const BETA = new Set(['dependency_alert', 'discussion', 'discussion_comment', 'projects_v2', 'projects_v2_item', 'personal_access_token_request']);
const DEPRECATED = new Set(['repository_vulnerability_alert', 'registry_package']);
const COMMON_REQUIRED = ['repository', 'sender'];
const COMMON_OPTIONAL = ['enterprise', 'installation', 'organization'];

function toSpec([name, permission, availability, activity, props, dev = '']: Row): EventSpec {
  const required = new Set(COMMON_REQUIRED);
  const optional = new Set(COMMON_OPTIONAL);
  const absent: string[] = [];
  const deviations = dev.split(' ').filter(Boolean);
  for (const token of deviations) {
    const property = token.replace(/^-|[!?]$/g, '');
    required.delete(property);
    optional.delete(property);
    if (token.startsWith('-')) absent.push(property);
    else if (token.endsWith('!')) required.add(property);
    else optional.add(property);
  }
  let action: EventSpec['action'] = 'none';
  for (const token of props.split(' ').filter(Boolean)) {
    const property = token.slice(0, -1);
    const isRequired = token.endsWith('!');
    if (property === 'action') action = isRequired ? 'required' : 'optional';
    (isRequired ? required : optional).add(property);
    (isRequired ? optional : required).delete(property);
  }
  return {
    name,
    permission,
    availability: availability.split(' '),
    activity,
    action,
    required: [...required],
    optional: [...optional],
    absent,
    deviations,
    beta: BETA.has(name),
    deprecated: DEPRECATED.has(name),
  };
}

export const CATALOGUE: ReadonlyMap<string, EventSpec> = new Map(ROWS.map((row) => [row[0], toSpec(row)]));

export function eventSpec(name: string): EventSpec | undefined {
  return CATALOGUE.get(name);
}

/**
 * The `action` of the one activity each row describes (docs/service.md#event-catalogue): its
 * required properties are those of that action. `*`: every action is that activity (a dispatch's
 * action is whatever the dispatcher chose).
 */
const SHOWN_ACTION: ReadonlyMap<string, string> = new Map([
  ['branch_protection_configuration', 'disabled'],
  ['branch_protection_rule', 'created'],
  ['check_run', 'completed'],
  ['check_suite', 'completed'],
  ['code_scanning_alert', 'appeared_in_branch'],
  ['commit_comment', 'created'],
  ['dependency_alert', 'auto_dismissed'],
  ['deploy_key', 'created'],
  ['deployment', 'created'],
  ['deployment_protection_rule', 'requested'],
  ['deployment_review', 'approved'],
  ['deployment_status', 'created'],
  ['discussion', 'answered'],
  ['discussion_comment', 'created'],
  ['service_app_authorization', 'revoked'],
  ['installation', 'created'],
  ['installation_repositories', 'added'],
  ['installation_target', 'renamed'],
  ['issue_comment', 'created'],
  ['issues', 'assigned'],
  ['label', 'created'],
  ['marketplace_purchase', 'cancelled'],
  ['member', 'added'],
  ['membership', 'added'],
  ['merge_group', 'checks_requested'],
  ['meta', 'deleted'],
  ['milestone', 'closed'],
  ['org_block', 'blocked'],
  ['organization', 'deleted'],
  ['package', 'published'],
  ['personal_access_token_request', 'approved'],
  ['project_card', 'converted'],
  ['project', 'closed'],
  ['project_column', 'created'],
  ['projects_v2', 'closed'],
  ['projects_v2_item', 'archived'],
  ['pull_request', 'assigned'],
  ['pull_request_review_comment', 'created'],
  ['pull_request_review', 'dismissed'],
  ['pull_request_review_thread', 'resolved'],
  ['registry_package', 'published'],
  ['release', 'created'],
  ['repository_advisory', 'published'],
  ['repository', 'archived'],
  ['repository_dispatch', '*'],
  ['repository_ruleset', 'created'],
  ['repository_vulnerability_alert', 'create'],
  ['secret_scanning_alert', 'created'],
  ['secret_scanning_alert_location', 'created'],
  ['security_advisory', 'published'],
  ['sponsorship', 'cancelled'],
  ['star', 'created'],
  ['team', 'added_to_repository'],
  ['watch', 'started'],
  ['workflow_job', 'completed'],
  ['workflow_run', 'completed'],
]);

/** Properties of the envelope (docs/service.md#webhook-envelope): rows speak of them for every action. */
const ENVELOPE = new Set(['action', 'repository', 'sender', 'enterprise', 'installation', 'organization']);

/** Where a required property comes from: the catalogue's row (the service's spec) or GitHub's published schema. */
export type RequirementSource = 'spec' | 'published';

export interface Requirement {
  property: string;
  source: RequirementSource;
}

/**
 * The actions of `event` that GitHub's published schemas know (src/webhook/shapes.ts), sorted; []
 * for an event whose payloads carry none, or one not in the catalogue.
 */
export function eventActions(event: string): string[] {
  const spec = CATALOGUE.get(event);
  if (!spec || spec.action === 'none') return [];
  return [...(PUBLISHED_ACTIONS.get(event)?.keys() ?? [])].filter(Boolean).sort();
}

/** Every event and action the catalogue knows: its events, each with the published schemas' actions (none where it has none). */
export function cataloguePairs(): { event: string; action?: string }[] {
  return [...CATALOGUE.keys()].flatMap((event) => {
    const actions = eventActions(event);
    return actions.length === 0 ? [{ event }] : actions.map((action) => ({ event, action }));
  });
}

/** Whether any `action` of the event is the activity its row describes (a dispatch's action is the dispatcher's event_type). */
export function actionIsFree(event: string): boolean {
  return SHOWN_ACTION.get(event) === '*';
}

/** The action of the one activity the event's row describes; `*` where any action is it; undefined for an event without actions. */
export function describedAction(event: string): string | undefined {
  return SHOWN_ACTION.get(event);
}

/**
 * What a payload of the event with `action` must carry, and on whose word. The row's list holds
 * for the activity it describes (and for every action of an event whose row names no activity, or
 * whose action is free). For another action, the row still rules the envelope (the row says which
 * of `repository`, `sender`, `organization`, … the event has, for all its actions), and the
 * event's own properties are those the published schema of that action requires; for an action no
 * published schema knows, those every published action of the event requires
 * (docs/service.md#published-schemas).
 */
export function requirements(spec: EventSpec, action: string | undefined): Requirement[] {
  const shown = SHOWN_ACTION.get(spec.name);
  const fromSpec = (property: string): Requirement => ({ property, source: 'spec' });
  if (spec.action === 'none' || shown === '*' || (action !== undefined && action === shown)) return spec.required.map(fromSpec);
  const published = PUBLISHED_ACTIONS.get(spec.name);
  const lists = [...(published?.values() ?? [])];
  let own: readonly string[] = [];
  if (action !== undefined && published?.has(action)) own = published.get(action) ?? [];
  else if (lists.length > 0) own = lists.reduce((all, some) => all.filter((property) => some.includes(property)));
  return [
    ...spec.required.filter((property) => ENVELOPE.has(property)).map(fromSpec),
    ...own.filter((property) => !ENVELOPE.has(property) && !spec.absent.includes(property)).map((property): Requirement => ({ property, source: 'published' })),
  ];
}

/** `requirements(...)`'s property names. */
export function requiredProperties(spec: EventSpec, action: string | undefined): string[] {
  return requirements(spec, action).map((requirement) => requirement.property);
}

/** Warnings for a payload that does not fit the catalogue; the delivery is still accepted (the catalogue may lag). */
export function catalogueWarnings(event: string, payload: Record<string, unknown>): string[] {
  const spec = CATALOGUE.get(event);
  if (!spec) return [`unknown event "${event}" (not in the catalogue)`];
  const warnings: string[] = [];
  // Own properties only: a payload's "__proto__" or "constructor" is data, never a lookup.
  const hasAction = Object.hasOwn(payload, 'action');
  const action = hasAction ? payload.action : undefined;
  if (hasAction && typeof action !== 'string') warnings.push(`"action" is ${describe(action)}, not a string`);
  const name = typeof action === 'string' ? action : undefined;
  const missing: string[] = [];
  for (const property of requiredProperties(spec, name)) if (!Object.hasOwn(payload, property)) missing.push(property);
  if (missing.length > 0) warnings.push(`missing required ${missing.join(', ')}${name !== undefined && name === SHOWN_ACTION.get(event) ? ` (of action ${name})` : ''}`);
  if (spec.action === 'none' && hasAction) warnings.push(`"${event}" carries no action, but this payload has action ${describe(action)}`);
  return warnings;
}

/** A value from a payload, named without calling anything on it (its "toString" may be data). */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
}

/** `--events` entries: `event` or `event.action`, each checked against the catalogue. */
export interface EventFilter {
  event: string;
  action?: string;
}

export function parseEventFilter(list: string): EventFilter[] {
  return list
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      // A dispatch's action is the dispatcher's event_type, dots and all: only the first dot divides.
      const dot = entry.indexOf('.');
      const event = dot < 0 ? entry : entry.slice(0, dot);
      const action = dot < 0 ? undefined : entry.slice(dot + 1);
      const spec = CATALOGUE.get(event);
      if (!spec) {
        const close = closest(event, [...CATALOGUE.keys()]);
        throw new Error(`unknown event "${event}"${close ? `; did you mean "${close}"?` : ''}`);
      }
      if (action !== undefined && spec.action === 'none') throw new Error(`"${event}" has no actions, so "${entry}" never matches`);
      return action === undefined ? { event } : { event, action };
    });
}

/** The candidate nearest a misspelt word, when one is near enough to suggest ("did you mean …?"). */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(word, name);
    if (!best || distance < best.distance) best = { name, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(word.length / 3)) ? best.name : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] as number;
}
