import type { Label, RepositoryIndex, Row, SiteIndex } from '../model.js';
import { date, escapeHtml, labelChip, page, type PageFrame, repositoryDir, sitePath, text } from './layout.js';

// The index of the organization and each repository's lists. A list is a complete <table> on its
// own; assets/site.js only hides rows (filters by state and label, search in titles) from the data
// attributes of each row, and shows the controls it drives, which are hidden without it.

interface RepositoryCounts {
  issues_open: number;
  issues_closed: number;
  pulls_open: number;
  pulls_merged: number;
  pulls_closed: number;
}

function countsOf(repository: RepositoryIndex): RepositoryCounts {
  const count = (rows: Map<number, Row>, state: Row['state']) => [...rows.values()].filter((row) => row.state === state).length;
  return {
    issues_open: count(repository.issues, 'open'),
    issues_closed: count(repository.issues, 'closed') + count(repository.issues, 'merged'),
    pulls_open: count(repository.pulls, 'open'),
    pulls_merged: count(repository.pulls, 'merged'),
    pulls_closed: count(repository.pulls, 'closed'),
  };
}

export function organizationPage(index: SiteIndex, verified: boolean): string {
  const name = index.organization ?? 'archive';
  const rows = [...index.repositories.values()].sort((a, b) => a.name.localeCompare(b.name)).map((repository) => {
    const counts = countsOf(repository);
    const [owner, repo] = repositoryDir(repository.name);
    const cell = (value: number, href: string, kind: string) => `<td class="count" data-count="${kind}"><a href="${href}">${value}</a></td>`;
    return `<tr data-repository="${escapeHtml(repository.name)}"><th scope="row"><a href="${sitePath(0, owner, repo, 'index.html')}">${text(repository.name)}</a></th>`
      + cell(counts.issues_open, sitePath(0, owner, repo, 'index.html'), 'issues-open')
      + cell(counts.issues_closed, sitePath(0, owner, repo, 'index.html'), 'issues-closed')
      + cell(counts.pulls_open, sitePath(0, owner, repo, 'pulls.html'), 'pulls-open')
      + cell(counts.pulls_merged, sitePath(0, owner, repo, 'pulls.html'), 'pulls-merged')
      + cell(counts.pulls_closed, sitePath(0, owner, repo, 'pulls.html'), 'pulls-closed')
      + cell(repository.releases, sitePath(0, owner, repo, 'releases.html'), 'releases')
      + cell(repository.milestones.length, sitePath(0, owner, repo, 'milestones.html'), 'milestones')
      + '</tr>';
  });
  const body = `<h1>${text(name)}</h1>
<table class="repositories">
<thead><tr><th scope="col">repository</th><th scope="col">open issues</th><th scope="col">closed issues</th><th scope="col">open pull requests</th><th scope="col">merged pull requests</th><th scope="col">closed pull requests</th><th scope="col">releases</th><th scope="col">milestones</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
  return page({ title: name, depth: 0, verified, trail: [[name, 'index.html']] }, body);
}

export type ListName = 'issues' | 'pulls' | 'releases' | 'milestones';

/** The repository's tabs, from one of its list pages (two below DIR). */
export function repositoryTabs(current: ListName): string {
  const tab = (name: ListName, file: string, label: string) =>
    `<a href="${file}"${name === current ? ' aria-current="page"' : ''}>${label}</a>`;
  return `<nav class="tabs">${tab('issues', 'index.html', 'Issues')} ${tab('pulls', 'pulls.html', 'Pull requests')} ${tab('releases', 'releases.html', 'Releases')} ${tab('milestones', 'milestones.html', 'Milestones')}</nav>`;
}

export function repositoryFrame(
  index: SiteIndex,
  repository: RepositoryIndex,
  verified: boolean,
  depth: number,
  title: string,
  script = false,
): PageFrame {
  const organization = index.organization ?? 'archive';
  const [owner, repo] = repositoryDir(repository.name);
  return {
    title,
    depth,
    verified,
    script,
    trail: [[organization, sitePath(depth, 'index.html')], [repository.name, sitePath(depth, owner, repo, 'index.html')]] as [string, string][],
  };
}

/** The issues (`index.html`) or pull requests (`pulls.html`) of a repository. */
export function itemListPage(index: SiteIndex, repository: RepositoryIndex, kind: 'issue' | 'pull', verified: boolean, userName: (url: string | undefined) => string): string {
  const rows = [...(kind === 'issue' ? repository.issues : repository.pulls).values()].sort((a, b) => b.number - a.number);
  const folder = kind === 'issue' ? 'issues' : 'pulls';
  const labelsUsed = new Map<string, Label>();
  const lines = rows.map((row) => {
    const labels = row.labels.map((url) => labelOf(repository, url));
    for (const label of labels) labelsUsed.set(label.name, label);
    return `<tr data-state="${row.state}" data-labels="${labels.map((label) => text(label.name)).join('\n')}" data-title="${text(row.title.toLowerCase())}">`
      + `<td class="number">#${row.number}</td>`
      + `<td class="title"><a href="${folder}/${row.number}.html">${text(row.title)}</a> ${labels.map((label) => labelChip(label.name, label.color)).join(' ')}</td>`
      + `<td><span class="state state-${row.state}">${row.state}</span></td>`
      + `<td class="author">${text(userName(row.author))}</td>`
      + `<td>${date(row.created_at)}</td>`
      + `<td>${date(row.merged_at ?? row.closed_at)}</td></tr>`;
  });
  const states = kind === 'issue' ? ['open', 'closed'] : ['open', 'merged', 'closed'];
  const labelOptions = [...labelsUsed.keys()].sort().map((name) => `<option value="${text(name)}">${text(name)}</option>`).join('');
  const heading = kind === 'issue' ? 'Issues' : 'Pull requests';
  const body = `<h1>${text(repository.name)}</h1>
${repositoryTabs(kind === 'issue' ? 'issues' : 'pulls')}
<div class="filters" hidden>
<label>state <select data-filter="state"><option value="">all</option>${states.map((state) => `<option value="${state}">${state}</option>`).join('')}</select></label>
<label>label <select data-filter="label"><option value="">all</option>${labelOptions}</select></label>
<label>title <input type="search" data-filter="title" placeholder="search titles"></label>
<span class="shown" data-shown></span>
</div>
<table class="items" data-list="${folder}">
<thead><tr><th scope="col">#</th><th scope="col">title</th><th scope="col">state</th><th scope="col">author</th><th scope="col">opened</th><th scope="col">${kind === 'issue' ? 'closed' : 'merged or closed'}</th></tr></thead>
<tbody>
${lines.join('\n')}
</tbody>
</table>`;
  return page(repositoryFrame(index, repository, verified, 2, `${heading} · ${repository.name}`, true), body);
}

export function milestonesPage(index: SiteIndex, repository: RepositoryIndex, verified: boolean): string {
  const rows = [...repository.issues.values(), ...repository.pulls.values()];
  const lines = repository.milestones.map((milestone) => {
    const of = rows.filter((row) => row.milestone === milestone.url);
    const open = of.filter((row) => row.state === 'open').length;
    return `<tr data-state="${text(milestone.state)}"><td class="title">${text(milestone.title)}</td><td>${text(milestone.state)}</td><td>${date(milestone.due_on)}</td><td>${date(milestone.closed_at)}</td><td class="count">${open} open, ${of.length - open} closed</td><td>${text(milestone.description)}</td></tr>`;
  });
  const body = `<h1>${text(repository.name)}</h1>
${repositoryTabs('milestones')}
<table class="milestones">
<thead><tr><th scope="col">milestone</th><th scope="col">state</th><th scope="col">due</th><th scope="col">closed</th><th scope="col">issues and pull requests</th><th scope="col">description</th></tr></thead>
<tbody>
${lines.join('\n')}
</tbody>
</table>`;
  return page(repositoryFrame(index, repository, verified, 2, `Milestones · ${repository.name}`), body);
}

/** A label as the repository defines it, or named by the last part of its URL. */
export function labelOf(repository: RepositoryIndex, url: string): Label {
  const known = repository.labels.get(url);
  if (known) return known;
  const last = url.split('/').pop() ?? url;
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    name = last;
  }
  return { name, color: undefined };
}
