import { filePath, linkEnv } from '../links.js';
import { renderMarkdown } from '../markdown.js';
import type { RepositoryIndex, SiteIndex, SlimAsset, SlimRecord } from '../model.js';
import { archivePath } from '../reading.js';
import { date, escapeHtml, page, text } from './layout.js';
import { repositoryFrame, repositoryTabs } from './lists.js';

// A repository's releases, newest first, each with its notes and its assets linked to their copies
// under files/releases/ (an asset the archive does not hold is named, not linked).

const DEPTH = 2;
const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

export function releasesPage(
  index: SiteIndex,
  repository: RepositoryIndex,
  releases: SlimRecord[],
  verified: boolean,
  userName: (url: unknown) => string,
): string {
  const env = linkEnv(index, repository, DEPTH);
  const at = (release: SlimRecord) => str(release.published_at) ?? str(release.created_at) ?? '';
  const sorted = [...releases].sort((a, b) => (at(a) < at(b) ? 1 : at(a) > at(b) ? -1 : 0));
  const sections = sorted.map((release) => {
    const assets = Array.isArray(release.release_assets) ? (release.release_assets as SlimAsset[]) : [];
    const items = assets.map((asset) => {
      const href = filePath(index, DEPTH, archivePath(asset.asset_url));
      const name = text(asset.name);
      const size = asset.size === undefined ? '' : ` <span class="size">${asset.size} bytes</span>`;
      return `<li>${href ? `<a href="${escapeHtml(href)}">${name}</a>` : `${name} <span class="missing">(not in the archive)</span>`}${size}${asset.label ? ` <span class="asset-label">${text(asset.label)}</span>` : ''}</li>`;
    });
    const flags = [release.prerelease === true ? 'pre-release' : '', str(release.state) === 'draft' ? 'draft' : ''].filter(Boolean).map((flag) => `<span class="flag">${flag}</span>`).join(' ');
    return `<article class="release"><h2>${text(str(release.name) || str(release.tag_name))} ${flags}</h2>
<p class="meta"><code>${text(str(release.tag_name))}</code> by <strong class="author">${text(userName(release.user))}</strong> ${date(at(release))}</p>
<div class="markdown">${renderMarkdown(str(release.body) ?? '', env)}</div>
${items.length > 0 ? `<ul class="assets">${items.join('\n')}</ul>` : ''}</article>`;
  });
  const body = `<h1>${text(repository.name)}</h1>
${repositoryTabs('releases')}
${sections.join('\n')}`;
  return page(repositoryFrame(index, repository, verified, DEPTH, `Releases · ${repository.name}`), body);
}
