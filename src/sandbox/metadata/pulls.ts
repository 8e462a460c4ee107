import { attachmentUrl, reviewId } from './attachments.js';
import { after, type Numbered, numbersOfKind, person, pullUrl, type RepoContext, shaOf } from './numbering.js';
import { assigneeOf, mergeCommitOf, pullState } from './issues.js';
import { diffHunk, pullBody, pullTitle, reviewBody, reviewCommentBody } from './markdown.js';
import { labelsOf, milestoneOf } from './repository.js';

// Pull requests, their reviews, the threads of a review (a place in the diff: path, position,
// line, diff hunk) and the comments in each thread, linked by URL as GitHub's archives link them:
// a comment names its pull request, review and thread.

type Record_ = Record<string, unknown>;

/** Review states as the archives write them: commented, changes requested, approved. */
const COMMENTED = 1;
const CHANGES_REQUESTED = 30;
const APPROVED = 40;

interface PlannedReview {
  state: number;
  /** Comments in each of its threads (the second of a thread replies to the first). */
  threads: number[];
}

/** The first pull request is asked for changes, then approved; the others get one review that fits their state. */
function reviewsOf({ index }: Numbered): PlannedReview[] {
  if (index === 0) return [{ state: CHANGES_REQUESTED, threads: [2] }, { state: APPROVED, threads: [] }];
  const state = pullState(index);
  if (state === 'merged') return [{ state: APPROVED, threads: [] }];
  if (state === 'open') return [{ state: COMMENTED, threads: [1] }];
  return [{ state: CHANGES_REQUESTED, threads: [2] }];
}

const headOf = (ctx: RepoContext, number: number) => shaOf(`${ctx.repo.full_name}#${number}:head`);

export function* pullRequestRecords(ctx: RepoContext): Generator<Record_> {
  for (const numbered of numbersOfKind(ctx, 'pull')) {
    const { number, index } = numbered;
    const state = pullState(index);
    const assignee = assigneeOf(ctx, numbered);
    const side = (ref: string, sha: string) => ({ ref, sha, user: ctx.repo.owner.html_url, repo: ctx.url });
    const ended = state === 'open' ? null : after(ctx, number, 60);
    yield {
      type: 'pull_request',
      url: pullUrl(ctx, number),
      user: person(ctx, number).url,
      repository: ctx.url,
      title: pullTitle(index),
      body: pullBody(ctx, number, index),
      base: side(ctx.repo.default_branch, shaOf(`${ctx.repo.full_name}#${number}:base`)),
      head: side(index === 0 ? 'add-the-code' : `topic/${number}`, headOf(ctx, number)),
      assignee,
      assignees: assignee ? [assignee] : [],
      milestone: milestoneOf(ctx, index)?.url ?? null,
      labels: labelsOf(ctx, index).map((label) => label.url),
      reactions: [],
      review_requests: state === 'open'
        ? [{ reviewer: person(ctx, number + 1).url, reviewer_type: 'User', created_at: after(ctx, number, 4), updated_at: after(ctx, number, 4), dismissed_at: null }]
        : [],
      close_issue_references: [],
      work_in_progress: index % 6 === 4,
      merged_at: state === 'merged' ? ended : null,
      closed_at: ended,
      created_at: after(ctx, number, 0),
      merge_commit_sha: state === 'merged' ? mergeCommitOf(ctx, number) : null,
    };
  }
}

interface Placed {
  ctx: RepoContext;
  numbered: Numbered;
  review: PlannedReview;
  /** Its place among the pull request's reviews. */
  which: number;
  url: string;
}

/** Every review of every pull request of the repository, with where it is. */
function* placedReviews(ctx: RepoContext): Generator<Placed> {
  for (const numbered of numbersOfKind(ctx, 'pull')) {
    for (const [which, review] of reviewsOf(numbered).entries()) {
      yield { ctx, numbered, review, which, url: `${pullUrl(ctx, numbered.number)}/files#pullrequestreview-${reviewId(numbered.number, which)}` };
    }
  }
}

export function* reviewRecords(ctx: RepoContext): Generator<Record_> {
  for (const { numbered, review, which, url } of placedReviews(ctx)) {
    const { number, index } = numbered;
    // The first review of the first pull request shows an image (attachments.ts).
    const image = index === 0 && which === 0 ? attachmentUrl(ctx, 'review.png') : undefined;
    yield {
      type: 'pull_request_review',
      url,
      pull_request: pullUrl(ctx, number),
      user: person(ctx, number + 1 + which).url,
      body: reviewBody(ctx, review.state, image),
      head_sha: headOf(ctx, number),
      formatter: 'markdown',
      state: review.state,
      reactions: [],
      created_at: after(ctx, number, 30 + which * 10),
      submitted_at: after(ctx, number, 30 + which * 10),
    };
  }
}

interface PlacedThread extends Placed {
  thread: number;
  comments: number;
  threadUrl: string;
}

function* placedThreads(ctx: RepoContext): Generator<PlacedThread> {
  for (const placed of placedReviews(ctx)) {
    for (const [thread, comments] of placed.review.threads.entries()) {
      const id = placed.numbered.number * 100 + 60 + placed.which * 5 + thread;
      yield { ...placed, thread, comments, threadUrl: `${pullUrl(ctx, placed.numbered.number)}/files#pullrequestreviewthread-${id}` };
    }
  }
}

/** Where a thread is in the diff: the fields its record and its comments share. */
function position(ctx: RepoContext, number: number) {
  const { path, hunk, line } = diffHunk(ctx);
  const head = headOf(ctx, number);
  return { diff_hunk: hunk, path, position: line, original_position: line, commit_id: head, original_commit_id: head };
}

export function* reviewThreadRecords(ctx: RepoContext): Generator<Record_> {
  for (const { numbered, url, threadUrl, which } of placedThreads(ctx)) {
    const { number } = numbered;
    const resolved = pullState(numbered.index) === 'merged';
    const { line } = diffHunk(ctx);
    yield {
      type: 'pull_request_review_thread',
      url: threadUrl,
      pull_request: pullUrl(ctx, number),
      pull_request_review: url,
      ...position(ctx, number),
      start_line: null,
      line,
      start_side: null,
      side: 'right',
      original_start_line: null,
      original_line: line,
      created_at: after(ctx, number, 30 + which * 10),
      resolved_at: resolved ? after(ctx, number, 55) : null,
      resolver: resolved ? person(ctx, number).url : null,
      subject_type: 'line',
      outdated: false,
    };
  }
}

export function* reviewCommentRecords(ctx: RepoContext): Generator<Record_> {
  for (const { numbered, url, threadUrl, which, thread, comments } of placedThreads(ctx)) {
    const { number } = numbered;
    const first = `${pullUrl(ctx, number)}/files#r${number * 100 + 70 + which * 5 + thread * 2}`;
    for (let comment = 0; comment < comments; comment++) {
      const reply = comment > 0;
      const time = after(ctx, number, 30 + which * 10 + comment * 3);
      yield {
        type: 'pull_request_review_comment',
        url: reply ? `${pullUrl(ctx, number)}/files#r${number * 100 + 70 + which * 5 + thread * 2 + comment}` : first,
        pull_request: pullUrl(ctx, number),
        pull_request_review: url,
        pull_request_review_thread: threadUrl,
        // The author of the pull request answers the reviewer.
        user: person(ctx, reply ? number : number + 1 + which).url,
        body: reviewCommentBody(ctx, reply),
        formatter: 'markdown',
        ...position(ctx, number),
        state: 1,
        in_reply_to: reply ? first : null,
        reactions: [],
        subject_type: 'line',
        created_at: time,
        updated_at: time,
      };
    }
  }
}
