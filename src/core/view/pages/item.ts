import { linkEnv } from '../links.js';
import { renderMarkdown } from '../markdown.js';
import { type ItemEntry, type ItemKind, type RepositoryIndex, type Row, type SiteIndex, type SlimRecord, stringOf } from '../model.js';
import { date, escapeHtml, labelChip, page, text } from './layout.js';
import { labelOf, repositoryFrame } from './lists.js';

// The page of one issue or pull request: its record, then one timeline by time of its comments,
// events and (for a pull request) reviews, each review with its threads: the file, the diff hunk
// and the review comments in order, replies included.

const DEPTH = 3;

export interface ItemPage {
  index: SiteIndex;
  repository: RepositoryIndex;
  kind: ItemKind;
  row: Row;
  entries: ItemEntry[];
  verified: boolean;
  userName: (url: unknown) => string;
  /** Comments, events and reviews past what one page holds (spool.ts), not shown. */
  leftOut?: number;
}

export function itemPage(input: ItemPage): string {
  const { index, repository, kind, row, entries, verified, userName, leftOut = 0 } = input;
  const env = linkEnv(index, repository, DEPTH);
  const body = (record: SlimRecord) => `<div class="markdown">${renderMarkdown(stringOf(record.body) ?? '', env)}</div>`;
  const record = entries.find((entry) => entry.k === 'record')?.r ?? {};
  const of = (k: ItemEntry['k']) => entries.filter((entry) => entry.k === k).map((entry) => entry.r);
  const threads = of('thread');
  const reviewComments = of('review_comment');

  // Grouped once, each by the URL it names: a pull request of 40,000 reviews was matched pair by pair.
  const groupBy = (records: SlimRecord[], key: string) => {
    const groups = new Map<unknown, SlimRecord[]>();
    for (const one of records) {
      const list = groups.get(one[key]);
      if (list) list.push(one);
      else groups.set(one[key], [one]);
    }
    return groups;
  };
  const commentsByThread = groupBy(reviewComments, 'pull_request_review_thread');
  const threadsByReview = groupBy(threads, 'pull_request_review');
  const threadUrls = new Set(threads.map((thread) => thread.url));
  const looseByReview = groupBy(reviewComments.filter((comment) => !threadUrls.has(comment.pull_request_review_thread)), 'pull_request_review');
  const commentsOf = (thread: SlimRecord) => commentsByThread.get(thread.url) ?? [];
  const timeline: { at: string; html: string }[] = [];
  for (const comment of of('comment')) {
    timeline.push({ at: stringOf(comment.created_at) ?? '', html: `<article class="comment"><header><strong class="author">${text(userName(comment.user))}</strong> commented ${date(stringOf(comment.created_at))}</header>${body(comment)}</article>` });
  }
  for (const event of of('event')) timeline.push({ at: stringOf(event.created_at) ?? '', html: eventLine(event, repository, userName) });
  const shownThreads = new Set<string>();
  for (const review of of('review')) {
    const own = threadsByReview.get(review.url) ?? [];
    for (const thread of own) shownThreads.add(stringOf(thread.url) ?? '');
    const loose = looseByReview.get(review.url) ?? [];
    const at = stringOf(review.submitted_at) ?? stringOf(review.created_at) ?? '';
    const parts = [
      ...own.map((thread) => threadHtml(thread, commentsOf(thread), userName, body)),
      ...loose.map((comment) => threadHtml(comment, [comment], userName, body)),
    ];
    timeline.push({
      at,
      html: `<article class="review"><header><strong class="author">${text(userName(review.user))}</strong> <span class="review-state">${reviewState(review.state)}</span> ${date(at)}</header>${stringOf(review.body) ? body(review) : ''}${parts.join('\n')}</article>`,
    });
  }
  const orphanThreads = threads.filter((thread) => !shownThreads.has(stringOf(thread.url) ?? ''));
  for (const thread of orphanThreads) {
    timeline.push({ at: stringOf(thread.created_at) ?? '', html: `<article class="review">${threadHtml(thread, commentsOf(thread), userName, body)}</article>` });
  }
  // By time; what has none (or the same) keeps the order of the archive.
  timeline.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));

  const labels = row.labels.map((url) => labelOf(repository, url));
  const milestone = repository.milestones.find((one) => one.url === row.milestone);
  const branches = kind === 'pull' && stringOf(record.head_ref) ? `<p class="branches">${text(stringOf(record.head_ref))} → ${text(stringOf(record.base_ref))}</p>` : '';
  const content = `<h1>${text(row.title)} <span class="number">#${row.number}</span></h1>
<p class="meta"><span class="state state-${row.state}">${row.state}</span> <strong class="author">${text(userName(row.author))}</strong> opened ${date(row.created_at)}${row.merged_at ? `, merged ${date(row.merged_at)}` : row.closed_at ? `, closed ${date(row.closed_at)}` : ''}</p>
${branches}<p class="labels">${labels.map((label) => labelChip(label.name, label.color)).join(' ')}${milestone ? ` <span class="milestone">milestone ${text(milestone.title)}</span>` : ''}</p>
<article class="comment opening"><header><strong class="author">${text(userName(row.author))}</strong> wrote ${date(row.created_at)}</header>${body(record)}</article>
<section class="timeline">
${timeline.map((entry) => entry.html).join('\n')}
</section>${leftOut > 0 ? `\n<p class="left-out">${leftOut} more comments, events and reviews are in the archive's metadata, past what one page holds: not shown here.</p>` : ''}`;
  return page(repositoryFrame(index, repository, verified, DEPTH, `${row.title} · #${row.number} · ${repository.name}`), content);
}

function reviewState(state: unknown): string {
  // A Map: a state of the archive's `__proto__` or `constructor` is a word like any other.
  const named = new Map([['1', 'commented'], ['30', 'requested changes'], ['40', 'approved'], ['0', 'pending'], ['50', 'dismissed']]);
  return text(named.get(String(state)) ?? (typeof state === 'string' ? state.toLowerCase().replace(/_/g, ' ') : 'reviewed'));
}

/** A thread of review comments: its file, its diff hunk, then its comments in order. */
type UserName = (url: unknown) => string;

function threadHtml(thread: SlimRecord, comments: SlimRecord[], userName: UserName, body: (record: SlimRecord) => string): string {
  const ordered = [...comments].sort((a, b) => {
    const x = stringOf(a.created_at) ?? '';
    const y = stringOf(b.created_at) ?? '';
    return x < y ? -1 : x > y ? 1 : 0;
  });
  const line = typeof thread.line === 'number' ? `, line ${thread.line}` : '';
  return `<section class="thread"><p class="path"><code>${text(stringOf(thread.path))}</code>${line}</p>
${diffHunk(stringOf(thread.diff_hunk) ?? '')}
${ordered.map((comment) => `<div class="review-comment${comment.in_reply_to ? ' reply' : ''}"><header><strong class="author">${text(userName(comment.user))}</strong> ${date(stringOf(comment.created_at))}</header>${body(comment)}</div>`).join('\n')}
</section>`;
}

/** A diff hunk as a <pre>, each line classed by its first character. */
function diffHunk(hunk: string): string {
  if (hunk === '') return '';
  const lines = hunk.split('\n').map((line) => {
    const kind = line.startsWith('@@') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'ctx';
    return `<span class="${kind}">${text(line)}</span>`;
  });
  return `<pre class="diff">${lines.join('')}</pre>`;
}

function eventLine(event: SlimRecord, repository: RepositoryIndex, userName: (url: unknown) => string): string {
  const name = stringOf(event.event) ?? 'event';
  const user = (url: unknown) => `<strong>${text(userName(url))}</strong>`;
  const label = () => {
    const url = stringOf(event.label);
    const known = url ? repository.labels.get(url) : undefined;
    return labelChip(known?.name ?? stringOf(event.label_name) ?? '', known?.color);
  };
  const commit = stringOf(event.commit_id) ? ` <code>${text(stringOf(event.commit_id)?.slice(0, 12))}</code>` : '';
  const said: Record<string, () => string> = {
    labeled: () => `added the label ${label()}`,
    unlabeled: () => `removed the label ${label()}`,
    milestoned: () => `added this to the milestone ${text(stringOf(event.milestone_title))}`,
    demilestoned: () => `removed this from the milestone ${text(stringOf(event.milestone_title))}`,
    assigned: () => `assigned ${user(event.subject)}`,
    unassigned: () => `unassigned ${user(event.subject)}`,
    review_requested: () => `asked ${user(event.subject)} for a review`,
    renamed: () => `renamed this from ${text(stringOf(event.title_was))} to ${text(stringOf(event.title_is))}`,
    merged: () => `merged this${commit}`,
    referenced: () => `referenced this in a commit${commit}`,
    closed: () => 'closed this',
    reopened: () => 'reopened this',
    head_ref_deleted: () => 'deleted the branch',
  };
  const what = (Object.hasOwn(said, name) ? said[name]?.() : undefined) ?? text(name.replace(/_/g, ' '));
  return `<p class="event event-${escapeHtml(name.replace(/[^a-z_]/g, ''))}">${user(event.actor)} ${what} ${date(stringOf(event.created_at))}</p>`;
}
