import { attachmentUrl, commentId } from './attachments.js';
import { after, issueUrl, type Numbered, numbersOf, numbersOfKind, person, pullUrl, type RepoContext, shaOf } from './numbering.js';
import { commentBody, issueBody, issueTitle } from './markdown.js';
import { labelsOf, milestoneOf } from './repository.js';

// Issues, the comments on issues and pull requests (one kind for both, as GitHub's archives have
// it: a comment names its `issue` or its `pull_request`), and their timeline of events (closed,
// reopened, merged, labeled, …). Each is made as it is written.

type Record_ = Record<string, unknown>;

/** Issue `index`: open, closed, or closed and reopened. */
function issueState(index: number): 'open' | 'closed' | 'reopened' {
  return (['open', 'closed', 'reopened'] as const)[index % 3] as 'open' | 'closed' | 'reopened';
}

/** Pull request `index`: merged, open, or closed without merging. */
export function pullState(index: number): 'merged' | 'open' | 'closed' {
  return (['merged', 'open', 'closed'] as const)[index % 3] as 'merged' | 'open' | 'closed';
}

/** Who is assigned to a number: every other one has someone. */
export function assigneeOf(ctx: RepoContext, { number, index }: Numbered): string | null {
  return index % 2 === 0 ? person(ctx, number + 1).url : null;
}

const parentOf = (ctx: RepoContext, { number, kind }: Numbered) =>
  kind === 'issue' ? { field: 'issue', url: issueUrl(ctx, number) } : { field: 'pull_request', url: pullUrl(ctx, number) };

export function* issueRecords(ctx: RepoContext): Generator<Record_> {
  for (const numbered of numbersOfKind(ctx, 'issue')) {
    const { number, index } = numbered;
    const state = issueState(index);
    const assignee = assigneeOf(ctx, numbered);
    const closedAt = state === 'closed' ? after(ctx, number, 60) : null;
    yield {
      type: 'issue',
      url: issueUrl(ctx, number),
      repository: ctx.url,
      user: person(ctx, number).url,
      title: issueTitle(index),
      body: issueBody(ctx, number, index, index === 0 ? attachmentUrl(ctx, 'screenshot.png') : undefined),
      assignee,
      assignees: assignee ? [assignee] : [],
      milestone: milestoneOf(ctx, index)?.url ?? null,
      labels: labelsOf(ctx, index).map((label) => label.url),
      reactions: index === 0 ? [{ user: person(ctx, number + 1).url, content: '+1', subject_type: 'Issue', created_at: after(ctx, number, 7) }] : [],
      closed_at: closedAt,
      created_at: after(ctx, number, 0),
      updated_at: state === 'open' ? after(ctx, number, 30) : after(ctx, number, state === 'closed' ? 60 : 90),
    };
  }
}

/** Comments on number `index` of its kind: the first of each kind has some, the others a few or none. */
function commentCount({ kind, index }: Numbered): number {
  if (kind === 'issue') return index === 0 ? 2 : index % 3;
  return index === 0 ? 1 : index % 2;
}

export function* issueCommentRecords(ctx: RepoContext): Generator<Record_> {
  for (const numbered of numbersOf(ctx)) {
    const parent = parentOf(ctx, numbered);
    const { number } = numbered;
    for (let which = 0; which < commentCount(numbered); which++) {
      // The first issue's first comment carries its log (attachments.ts).
      const log = numbered.kind === 'issue' && numbered.index === 0 && which === 0 ? attachmentUrl(ctx, 'build-log.txt') : undefined;
      yield {
        type: 'issue_comment',
        url: `${parent.url}#issuecomment-${commentId(number, which)}`,
        [parent.field]: parent.url,
        user: person(ctx, number + which + 1).url,
        body: commentBody(ctx, number, which, log),
        formatter: 'markdown',
        reactions: [],
        created_at: after(ctx, number, 10 + which * 5),
        updated_at: after(ctx, number, 10 + which * 5),
      };
    }
  }
}

/** The events of one number, in the order they happened. */
function eventsOf(ctx: RepoContext, numbered: Numbered): [minutes: number, event: string, fields: Record_][] {
  const { number, index, kind } = numbered;
  const events: [number, string, Record_][] = labelsOf(ctx, index).map((label) => [
    1,
    'labeled',
    { label: label.url, label_name: label.name, label_color: label.color, label_text_color: 'fff' },
  ]);
  const milestone = milestoneOf(ctx, index);
  if (milestone) events.push([2, 'milestoned', { milestone_title: milestone.title }]);
  const assignee = assigneeOf(ctx, numbered);
  if (assignee) events.push([3, 'assigned', { subject: assignee }]);
  if (kind === 'issue') {
    if (index % 5 === 3) events.push([4, 'renamed', { title_was: 'Names come out wrong', title_is: issueTitle(index) }]);
    if (index % 4 === 1) events.push([20, 'referenced', { commit_id: shaOf(`${ctx.repo.full_name}#${number}:fix`), commit_repository: ctx.url }]);
    const state = issueState(index);
    if (state !== 'open') events.push([60, 'closed', {}]);
    if (state === 'reopened') events.push([90, 'reopened', {}]);
    return events;
  }
  events.push([4, 'review_requested', { subject: person(ctx, number + 1).url }]);
  const state = pullState(index);
  if (state === 'merged') {
    events.push([60, 'merged', { commit_id: mergeCommitOf(ctx, number) }], [60, 'closed', {}], [61, 'head_ref_deleted', {}]);
  }
  if (state === 'closed') events.push([60, 'closed', {}]);
  return events;
}

export function mergeCommitOf(ctx: RepoContext, number: number): string {
  return shaOf(`${ctx.repo.full_name}#${number}:merge`);
}

export function* issueEventRecords(ctx: RepoContext): Generator<Record_> {
  for (const numbered of numbersOf(ctx)) {
    const parent = parentOf(ctx, numbered);
    for (const [which, [minutes, event, fields]] of eventsOf(ctx, numbered).entries()) {
      yield {
        type: 'issue_event',
        url: `${parent.url}#event-${numbered.number * 100 + 10 + which}`,
        [parent.field]: parent.url,
        actor: person(ctx, numbered.number + (event === 'closed' || event === 'merged' ? 1 : 0)).url,
        event,
        ...fields,
        created_at: after(ctx, numbered.number, minutes),
      };
    }
  }
}
