// Payloads for the actions nobody published an example of: each is derived from the nearest
// published example (`from`, an "event.action" built first), with its `action` set and what that
// action implies set too (`apply`: the state it leaves the object in, the properties only it
// carries), so that a handler reading the payload meets what the action would send. `note` says
// what changed; it is shown as the payload's `adapted` (docs/cli.md, webhook send). Where the event
// has no example at all, the main object is written from the published schema's fields, with
// values in keeping with the envelope it is put in. scripts/build-samples.js uses these; the build
// fails on one the published schema rejects.
import { nodeId } from './sample-fills.js';

/** A user or organization as a payload's `sender` or `owner` shows it, from an existing one. */
const user = (from) => structuredClone(from);

/** An organization in the webhook envelope's shape (organization-simple), from its login, id and node id. */
function organization(login, id, node, description = null) {
  const api = `https://api.github.com/orgs/${login}`;
  return {
    login,
    id,
    node_id: node,
    url: api,
    repos_url: `${api}/repos`,
    events_url: `${api}/events`,
    hooks_url: `${api}/hooks`,
    issues_url: `${api}/issues`,
    members_url: `${api}/members{/member}`,
    public_members_url: `${api}/public_members{/member}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    description,
  };
}

/** The repository, organization, sender and installation of a payload, in that order, leaving out what it lacks. */
function envelope(payload, names = ['repository', 'organization', 'enterprise', 'sender', 'installation']) {
  return Object.fromEntries(names.filter((name) => payload[name] !== undefined).map((name) => [name, payload[name]]));
}

export const DERIVED = {
  'branch_protection_configuration.disabled': {
    from: 'branch_protection_rule.created',
    note: 'the repository and sender of a branch protection rule example; the event carries nothing else',
    apply: (p) => ({ action: p.action, ...envelope(p) }),
  },
  'branch_protection_configuration.enabled': {
    from: 'branch_protection_rule.created',
    note: 'the repository and sender of a branch protection rule example; the event carries nothing else',
    apply: (p) => ({ action: p.action, ...envelope(p) }),
  },
  'code_scanning_alert.appeared_in_branch': {
    from: 'code_scanning_alert.created',
    note: 'the open alert found again on the default branch: `ref` and the newest instance are that branch',
    apply: (p) => {
      const branch = `refs/heads/${p.repository.default_branch}`;
      p.ref = branch;
      if (p.alert.most_recent_instance) p.alert.most_recent_instance.ref = branch;
    },
  },
  'code_scanning_alert.reopened_by_user': {
    from: 'code_scanning_alert.reopened',
    note: 'the same reopening, done by the sender: the alert is open, with no dismissal',
  },
  'dependency_alert.auto_dismissed': {
    from: 'dependency_alert.created',
    note: 'the open alert dismissed by an auto-triage rule: state "auto_dismissed", `auto_dismissed_at` set',
    apply: (p) => {
      Object.assign(p.alert, { state: 'auto_dismissed', auto_dismissed_at: '2023-06-25T08:00:00Z', updated_at: '2023-06-25T08:00:00Z' });
    },
  },
  'dependency_alert.auto_reopened': {
    from: 'dependency_alert.auto_dismissed',
    note: 'the auto-dismissed alert reopened by its rule: state "open", `auto_dismissed_at` cleared',
    apply: (p) => {
      Object.assign(p.alert, { state: 'open', auto_dismissed_at: null, updated_at: '2023-06-26T08:00:00Z' });
    },
  },
  'dependency_alert.dismissed': {
    from: 'dependency_alert.created',
    note: 'the open alert dismissed by the sender: state "dismissed", when, by whom, why',
    apply: (p) => {
      Object.assign(p.alert, {
        state: 'dismissed',
        dismissed_at: '2023-06-25T08:00:00Z',
        dismissed_by: user(p.sender),
        dismissed_reason: 'tolerable_risk',
        dismissed_comment: 'Only used in development.',
        updated_at: '2023-06-25T08:00:00Z',
      });
    },
  },
  'dependency_alert.reintroduced': {
    from: 'dependency_alert.created',
    note: 'a fixed alert whose vulnerable dependency came back: state "open", `fixed_at` cleared',
    apply: (p) => {
      Object.assign(p.alert, { state: 'open', fixed_at: null, updated_at: '2023-06-27T08:00:00Z' });
    },
  },
  'dependency_alert.reopened': {
    from: 'dependency_alert.dismissed',
    note: 'the dismissed alert reopened by the sender: state "open", the dismissal cleared',
    apply: (p) => {
      Object.assign(p.alert, {
        state: 'open',
        dismissed_at: null,
        dismissed_by: null,
        dismissed_reason: null,
        dismissed_comment: null,
        updated_at: '2023-06-26T08:00:00Z',
      });
    },
  },
  'deploy_key.deleted': {
    from: 'deploy_key.created',
    note: 'the same key, deleted',
  },
  'deployment_protection_rule.requested': {
    from: 'deployment.created',
    note: 'the deployment of a deployment example waiting on a protection rule of its environment',
    apply: (p) => ({
      action: p.action,
      environment: p.deployment.environment,
      event: 'workflow_dispatch',
      deployment_callback_url: `${p.repository.url}/actions/runs/${p.workflow_run?.id ?? 1}/deployment_protection_rule`,
      deployment: p.deployment,
      pull_requests: [],
      ...envelope(p),
    }),
  },
  'deployment_review.approved': {
    from: 'deployment_review.requested',
    note: 'the requested review approved by the sender: `approver`, `comment`, the reviewer and the job runs it releases',
    apply: (p) => approvedOrRejected(p, 'Approved for the test environment.'),
  },
  'deployment_review.rejected': {
    from: 'deployment_review.requested',
    note: 'the requested review rejected by the sender: `approver`, `comment`, the reviewer and the job runs it stops',
    apply: (p) => approvedOrRejected(p, 'Not before the release freeze ends.'),
  },
  'discussion.closed': {
    from: 'discussion.edited',
    note: 'the open discussion closed as resolved: state "closed", `state_reason` "resolved"',
    apply: (p) => {
      Object.assign(p.discussion, { state: 'closed', state_reason: 'resolved', updated_at: '2021-04-01T12:00:00Z' });
    },
  },
  'discussion.deleted': {
    from: 'discussion.edited',
    note: 'the same discussion, deleted',
  },
  'discussion.reopened': {
    from: 'discussion.closed',
    note: 'the closed discussion reopened: state "open", `state_reason` "reopened"',
    apply: (p) => {
      Object.assign(p.discussion, { state: 'open', state_reason: 'reopened', updated_at: '2021-04-02T12:00:00Z' });
    },
  },
  'discussion.unpinned': {
    from: 'discussion.pinned',
    note: 'the same discussion, unpinned',
  },
  'installation_target.renamed': {
    from: 'installation.created',
    note: 'the account of an installation example renamed: `account`, `changes.login.from`, the installation\'s id',
    apply: (p) => {
      const account = user(p.installation.account);
      return {
        action: p.action,
        account,
        changes: { login: { from: `${account.login}-old` } },
        installation: { id: p.installation.id, node_id: nodeId('IntegrationInstallation', p.installation.id) },
        target_type: account.type,
        sender: p.sender,
      };
    },
  },
  'issues.closed': {
    from: 'issues.reopened',
    note: 'the open issue closed as completed: state "closed", `closed_at`, `state_reason` "completed"',
    apply: (p) => {
      Object.assign(p.issue, { state: 'closed', closed_at: '2019-05-15T15:25:00Z', updated_at: '2019-05-15T15:25:00Z', state_reason: 'completed' });
    },
  },
  'issues.typed': {
    from: 'issues.opened',
    note: 'a type ("Bug") given to the issue: `type`, and the issue\'s `type`',
    apply: (p) => {
      p.type = issueType();
      p.issue.type = issueType();
    },
  },
  'issues.untyped': {
    from: 'issues.typed',
    note: 'the type taken off the issue: `type` is the one removed, the issue\'s is null',
    apply: (p) => {
      p.issue.type = null;
    },
  },
  'marketplace_purchase.pending_change': {
    from: 'marketplace_purchase.changed',
    note: 'the plan change asked for, effective at the next billing date, which `effective_date` is',
    apply: (p) => {
      p.effective_date = p.marketplace_purchase.next_billing_date;
    },
  },
  'marketplace_purchase.pending_change_cancelled': {
    from: 'marketplace_purchase.pending_change',
    note: 'the pending change withdrawn: the purchase stays on its current plan',
    apply: (p) => {
      p.marketplace_purchase = { ...p.previous_marketplace_purchase, next_billing_date: p.marketplace_purchase.next_billing_date };
      delete p.previous_marketplace_purchase;
    },
  },
  'member.removed': {
    from: 'member.added',
    note: 'the same collaborator removed: no `changes`',
    apply: (p) => {
      delete p.changes;
    },
  },
  'merge_group.destroyed': {
    from: 'merge_group.checks_requested',
    note: 'the merge group done with, as merged: `reason` "merged"',
    apply: (p) => {
      p.reason = 'merged';
    },
  },
  'milestone.edited': {
    from: 'milestone.created',
    note: 'the description changed: `changes.description.from` holds the old one',
    apply: (p) => {
      p.changes = { description: { from: 'Space flight simulator' } };
      p.milestone.updated_at = '2019-05-15T15:22:00Z';
    },
  },
  'milestone.opened': {
    from: 'milestone.closed',
    note: 'the closed milestone opened again: state "open", `closed_at` cleared',
    apply: (p) => {
      Object.assign(p.milestone, { state: 'open', closed_at: null, updated_at: '2019-05-15T15:22:00Z' });
    },
  },
  'organization.deleted': {
    from: 'organization.renamed',
    note: 'the same organization, deleted: no `changes`',
    apply: (p) => {
      delete p.changes;
    },
  },
  'package.updated': {
    from: 'package.published',
    note: 'a version of the published package updated: its `body` as text, `body_html`, `author` (the sender)',
    apply: (p) => updatedPackageVersion(p, p.package),
  },
  'personal_access_token_request.created': {
    from: 'organization.renamed',
    note: 'a request by the sender of an organization example for a fine-grained token on it (the event has no example)',
    apply: (p) => tokenRequest(p),
  },
  'personal_access_token_request.approved': {
    from: 'personal_access_token_request.created',
    note: 'the request granted by an organization owner',
  },
  'personal_access_token_request.denied': {
    from: 'personal_access_token_request.created',
    note: 'the request refused by an organization owner',
  },
  'personal_access_token_request.cancelled': {
    from: 'personal_access_token_request.created',
    note: 'the request withdrawn by its requester',
  },
  'project.closed': {
    from: 'project.created',
    note: 'the open project closed: state "closed"',
    apply: (p) => {
      Object.assign(p.project, { state: 'closed', updated_at: '2019-05-15T15:25:00Z' });
    },
  },
  'project.reopened': {
    from: 'project.closed',
    note: 'the closed project reopened: state "open"',
    apply: (p) => {
      Object.assign(p.project, { state: 'open', updated_at: '2019-05-15T15:26:00Z' });
    },
  },
  'project.edited': {
    from: 'project.created',
    note: 'the name changed: `changes.name.from` holds the old one',
    apply: (p) => {
      p.changes = { name: { from: 'Space 1.0' } };
      p.project.updated_at = '2019-05-15T15:22:00Z';
    },
  },
  'project.deleted': {
    from: 'project.created',
    note: 'the same project, deleted',
  },
  'project_card.converted': {
    from: 'project_card.created',
    note: 'the note card turned into an issue: `changes.note.from` holds the note, the card points at the issue',
    apply: (p) => {
      p.changes = { note: { from: p.project_card.note } };
      Object.assign(p.project_card, { note: null, content_url: `${p.repository.url}/issues/3`, updated_at: '2019-05-15T15:23:00Z' });
    },
  },
  'project_card.edited': {
    from: 'project_card.created',
    note: 'the note changed: `changes.note.from` holds the old one',
    apply: (p) => {
      p.changes = { note: { from: 'Work that can be done in an hour.' } };
      p.project_card.updated_at = '2019-05-15T15:22:00Z';
    },
  },
  'project_column.deleted': {
    from: 'project_column.created',
    note: 'the same column, deleted',
  },
  'project_column.moved': {
    from: 'project_column.created',
    note: 'the column moved after another: `after_id`',
    apply: (p) => {
      p.after_id = p.project_column.id - 1;
    },
  },
  'projects_v2.created': {
    from: 'projects_v2_item.created',
    note: 'the project of a project item example, written from the schema\'s fields (the event has no example)',
    apply: (p) => ({ action: p.action, projects_v2: projectV2(p), ...envelope(p, ['organization', 'sender', 'installation']) }),
  },
  'projects_v2.edited': {
    from: 'projects_v2.created',
    note: 'the title changed: `changes.title` holds the old and new ones',
    apply: (p) => {
      p.changes = { title: { from: 'Roadmap draft', to: p.projects_v2.title } };
    },
  },
  'projects_v2.closed': {
    from: 'projects_v2.created',
    note: 'the open project closed: `closed_at` set',
    apply: (p) => {
      Object.assign(p.projects_v2, { closed_at: '2022-06-01T12:00:00Z', updated_at: '2022-06-01T12:00:00Z', state: 'closed' });
    },
  },
  'projects_v2.reopened': {
    from: 'projects_v2.closed',
    note: 'the closed project reopened: `closed_at` cleared',
    apply: (p) => {
      Object.assign(p.projects_v2, { closed_at: null, updated_at: '2022-06-02T12:00:00Z', state: 'open' });
    },
  },
  'projects_v2.deleted': {
    from: 'projects_v2.created',
    note: 'the project deleted by the sender: `deleted_at`, `deleted_by`',
    apply: (p) => {
      Object.assign(p.projects_v2, { deleted_at: '2022-06-03T12:00:00Z', deleted_by: user(p.sender), updated_at: '2022-06-03T12:00:00Z' });
    },
  },
  'projects_v2_item.deleted': {
    from: 'projects_v2_item.created',
    note: 'the same item, deleted',
  },
  'pull_request.auto_merge_enabled': {
    from: 'pull_request.opened',
    note: 'auto-merge turned on by the sender: the pull request\'s `auto_merge`',
    apply: (p) => {
      p.pull_request.auto_merge = { enabled_by: user(p.sender), merge_method: 'squash', commit_title: p.pull_request.title, commit_message: '' };
    },
  },
  'pull_request.auto_merge_disabled': {
    from: 'pull_request.auto_merge_enabled',
    note: 'auto-merge turned off again: `auto_merge` null, `reason`',
    apply: (p) => {
      p.pull_request.auto_merge = null;
      p.reason = 'Auto-merge was disabled by the sender';
    },
  },
  'pull_request.enqueued': {
    from: 'pull_request.opened',
    note: 'the pull request added to the merge queue',
  },
  'pull_request.dequeued': {
    from: 'pull_request.enqueued',
    note: 'the pull request taken out of the merge queue, as merged: `reason` "MERGE"',
    apply: (p) => {
      p.reason = 'MERGE';
    },
  },
  'pull_request.milestoned': {
    from: 'pull_request.opened',
    note: 'a milestone given to the pull request: `milestone`, and the pull request\'s',
    apply: (p, example) => {
      const { milestone } = example('milestone.created');
      p.milestone = milestone;
      p.pull_request.milestone = milestone;
    },
  },
  'pull_request.demilestoned': {
    from: 'pull_request.milestoned',
    note: 'the milestone taken off: `milestone` is the one removed, the pull request\'s is null',
    apply: (p) => {
      p.pull_request.milestone = null;
    },
  },
  'pull_request.edited': {
    from: 'pull_request.opened',
    note: 'the title changed: `changes.title.from` holds the old one',
    apply: (p) => {
      p.changes = { title: { from: 'Update README' } };
    },
  },
  'pull_request_review.edited': {
    from: 'pull_request_review.submitted',
    note: 'the review\'s text changed: `changes.body.from` holds the old one',
    apply: (p) => {
      p.changes = { body: { from: 'Looks good' } };
    },
  },
  'registry_package.updated': {
    from: 'registry_package.published',
    note: 'a version of the published package updated: its `body` as text, `body_html`, `author` (the sender)',
    apply: (p) => updatedPackageVersion(p, p.registry_package),
  },
  'release.unpublished': {
    from: 'release.published',
    note: 'the published release turned back into a draft: `draft` true, `published_at` null',
    apply: (p) => {
      Object.assign(p.release, { draft: true, published_at: null, updated_at: '2019-05-15T15:25:00Z' });
    },
  },
  'repository.archived': {
    from: 'repository.publicized',
    note: 'the same repository, archived: `archived` true',
    apply: (p) => {
      Object.assign(p.repository, { archived: true, updated_at: '2019-05-15T15:25:00Z' });
    },
  },
  'repository.unarchived': {
    from: 'repository.archived',
    note: 'the archived repository unarchived: `archived` false',
    apply: (p) => {
      Object.assign(p.repository, { archived: false, updated_at: '2019-05-15T15:26:00Z' });
    },
  },
  'repository_advisory.reported': {
    from: 'repository.publicized',
    note: 'a vulnerability reported privately on the repository of a repository example, written from the schema\'s fields (the event has no example)',
    apply: (p) => ({ action: p.action, repository_advisory: advisory(p, 'triage'), ...envelope(p) }),
  },
  'repository_advisory.published': {
    from: 'repository_advisory.reported',
    note: 'the reported advisory published: state "published", `published_at`',
    apply: (p) => {
      Object.assign(p.repository_advisory, { state: 'published', published_at: '2019-05-20T10:00:00Z', updated_at: '2019-05-20T10:00:00Z' });
      p.repository_advisory.publisher = null;
    },
  },
  'repository_ruleset.created': {
    from: 'repository.publicized',
    note: 'a ruleset of the repository of a repository example, written from the schema\'s fields (the event has no example)',
    apply: (p) => ({ action: p.action, repository_ruleset: ruleset(p), ...envelope(p) }),
  },
  'repository_ruleset.edited': {
    from: 'repository_ruleset.created',
    note: 'the enforcement changed: `changes.enforcement.from` holds the old one',
    apply: (p) => {
      p.changes = { enforcement: { from: 'evaluate' } };
      p.repository_ruleset.updated_at = '2019-05-16T10:00:00Z';
    },
  },
  'repository_ruleset.deleted': {
    from: 'repository_ruleset.created',
    note: 'the same ruleset, deleted',
  },
  'repository_vulnerability_alert.reopen': {
    from: 'repository_vulnerability_alert.dismiss',
    note: 'the dismissed alert reopened: state "open", the dismissal cleared',
    apply: (p) => {
      p.alert.state = 'open';
      for (const key of ['dismisser', 'dismiss_reason', 'dismissed_at']) delete p.alert[key];
    },
  },
  'repository_vulnerability_alert.resolve': {
    from: 'repository_vulnerability_alert.create',
    note: 'the open alert resolved by upgrading the package: state "fixed", `fixed_at`',
    apply: (p) => {
      Object.assign(p.alert, { state: 'fixed', fixed_at: '2021-03-02T10:00:00Z' });
    },
  },
  'secret_scanning_alert.created': {
    from: 'secret_scanning_alert.reopened',
    note: 'the same alert when first found: open, never resolved',
  },
  'secret_scanning_alert.resolved': {
    from: 'secret_scanning_alert.reopened',
    note: 'the open alert resolved by the sender as revoked: `resolution`, `resolved_by`, `resolved_at`',
    apply: (p) => {
      Object.assign(p.alert, { resolution: 'revoked', resolved_by: user(p.sender), resolved_at: '2020-11-25T10:00:00Z' });
    },
  },
  'secret_scanning_alert.assigned': {
    from: 'secret_scanning_alert.reopened',
    note: 'the alert assigned to the sender: `assignee`',
    apply: (p) => {
      p.assignee = user(p.sender);
      p.alert.assigned_to = user(p.sender);
    },
  },
  'secret_scanning_alert.unassigned': {
    from: 'secret_scanning_alert.assigned',
    note: 'the assignee taken off: `assignee` is the one removed, the alert has none',
    apply: (p) => {
      p.alert.assigned_to = null;
    },
  },
  'secret_scanning_alert.publicly_leaked': {
    from: 'secret_scanning_alert.reopened',
    note: 'the secret found in a public place: `publicly_leaked` true',
    apply: (p) => {
      p.alert.publicly_leaked = true;
    },
  },
  'secret_scanning_alert.validated': {
    from: 'secret_scanning_alert.reopened',
    note: 'the secret checked with its provider and found active: `validity` "active"',
    apply: (p) => {
      p.alert.validity = 'active';
    },
  },
  'sponsorship.cancelled': {
    from: 'sponsorship.created',
    note: 'the same sponsorship, cancelled at the end of its billing cycle',
  },
  'sponsorship.pending_cancellation': {
    from: 'sponsorship.created',
    note: 'the sponsorship to be cancelled at the end of the billing cycle, which `effective_date` is',
    apply: (p) => {
      p.effective_date = '2020-01-20T00:00:00+00:00';
    },
  },
  'sponsorship.edited': {
    from: 'sponsorship.created',
    note: 'the privacy level changed: `changes.privacy_level.from` holds the old one',
    apply: (p) => {
      p.changes = { privacy_level: { from: 'private' } };
    },
  },
  'sponsorship.tier_changed': {
    from: 'sponsorship.pending_tier_change',
    note: 'the pending tier change taken effect: no `effective_date`',
    apply: (p) => {
      delete p.effective_date;
    },
  },
  'workflow_run.in_progress': {
    from: 'workflow_run.requested',
    note: 'the requested run started: status "in_progress"',
    apply: (p) => {
      Object.assign(p.workflow_run, { status: 'in_progress', updated_at: p.workflow_run.run_started_at });
    },
  },
};

function approvedOrRejected(p, comment) {
  const { requestor: _requestor, reviewers: _reviewers, environment, workflow_job_run: job, ...rest } = p;
  const run = { ...job, name: null, conclusion: null, environment };
  return {
    ...rest,
    approver: user(p.sender),
    comment,
    reviewers: [{ reviewer: user(p.sender), type: 'User' }],
    workflow_job_run: run,
    workflow_job_runs: [run],
  };
}

function issueType() {
  return {
    id: 410,
    node_id: 'IT_kwDNAd3NAZo',
    name: 'Bug',
    description: 'An unexpected problem or behavior',
    color: 'red',
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-01-01T00:00:00Z',
    is_enabled: true,
  };
}

function updatedPackageVersion(p, pkg) {
  const version = pkg.package_version;
  const text = version.description ?? version.summary ?? '';
  Object.assign(version, { body: text, body_html: `<p>${text}</p>`, author: user(p.sender), updated_at: pkg.updated_at });
}

function tokenRequest(p) {
  const org = p.organization;
  return {
    action: p.action,
    personal_access_token_request: {
      id: 25381,
      owner: user(p.sender),
      permissions_added: { organization: { members: 'read' }, repository: { metadata: 'read', contents: 'read' } },
      permissions_upgraded: {},
      permissions_result: { organization: { members: 'read' }, repository: { metadata: 'read', contents: 'read' } },
      repository_selection: 'all',
      repository_count: null,
      repositories: null,
      created_at: '2023-05-24T14:50:53Z',
      token_id: 1136,
      token_name: `${org.login} reader`,
      token_expired: false,
      token_expires_at: '2023-11-16T08:00:00Z',
      token_last_used_at: null,
    },
    organization: organization(org.login, org.id, org.node_id, org.description ?? null),
    sender: p.sender,
    installation: p.installation,
  };
}

function projectV2(p) {
  return {
    id: 2,
    node_id: p.projects_v2_item.project_node_id,
    owner: organizationAsUser(p.organization),
    creator: user(p.sender),
    title: 'Roadmap',
    description: null,
    public: false,
    closed_at: null,
    created_at: '2022-05-20T21:20:00Z',
    updated_at: '2022-05-20T21:20:00Z',
    number: 2,
    short_description: null,
    deleted_at: null,
    deleted_by: null,
  };
}

/** The organization that owns a project, as the user-shaped `owner` GitHub gives it. */
function organizationAsUser(org) {
  const api = `https://api.github.com/users/${org.login}`;
  return {
    login: org.login,
    id: org.id,
    node_id: org.node_id,
    avatar_url: `https://avatars.githubusercontent.com/u/${org.id}?v=4`,
    gravatar_id: '',
    url: api,
    html_url: `https://github.com/${org.login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: 'Organization',
    site_admin: false,
  };
}

function advisory(p, state) {
  const repository = p.repository;
  const ghsa = 'GHSA-abcd-1234-efgh';
  return {
    ghsa_id: ghsa,
    cve_id: null,
    url: `${repository.url}/security-advisories/${ghsa}`,
    html_url: `${repository.html_url}/security/advisories/${ghsa}`,
    summary: 'Path traversal in the file server',
    description: 'A request with `..` in its path can read files outside the served directory.',
    severity: 'high',
    author: null,
    publisher: null,
    identifiers: [{ value: ghsa, type: 'GHSA' }],
    state,
    created_at: '2019-05-16T10:00:00Z',
    updated_at: '2019-05-16T10:00:00Z',
    published_at: null,
    closed_at: null,
    withdrawn_at: null,
    submission: { accepted: false },
    vulnerabilities: [
      {
        package: { ecosystem: 'npm', name: repository.name.toLowerCase() },
        vulnerable_version_range: '< 1.0.1',
        patched_versions: '1.0.1',
        vulnerable_functions: [],
      },
    ],
    cvss: null,
    cwes: [{ cwe_id: 'CWE-22', name: 'Improper Limitation of a Pathname to a Restricted Directory (\'Path Traversal\')' }],
    cwe_ids: ['CWE-22'],
    credits: [{ login: p.sender.login, type: 'reporter' }],
    credits_detailed: [{ user: user(p.sender), type: 'reporter', state: 'accepted' }],
    collaborating_users: null,
    collaborating_teams: null,
    private_fork: null,
  };
}

function ruleset(p) {
  const repository = p.repository;
  return {
    id: 42,
    name: 'main',
    target: 'branch',
    source_type: 'Repository',
    source: repository.full_name,
    enforcement: 'active',
    bypass_actors: [{ actor_id: 5, actor_type: 'RepositoryRole', bypass_mode: 'always' }],
    node_id: 'RRS_lACkVXNlcgQB',
    _links: {
      self: { href: `${repository.url}/rulesets/42` },
      html: { href: `${repository.html_url}/rules/42` },
    },
    conditions: { ref_name: { include: ['~DEFAULT_BRANCH'], exclude: [] } },
    rules: [{ type: 'deletion' }, { type: 'non_fast_forward' }],
    created_at: '2019-05-16T10:00:00Z',
    updated_at: '2019-05-16T10:00:00Z',
  };
}
