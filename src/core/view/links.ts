import type { LinkEnv } from './markdown.js';
import type { RepositoryIndex, SiteIndex } from './model.js';
import { sitePath } from './pages/layout.js';
import { archivePath } from './reading.js';
import { placeOf } from './record-urls.js';

// Where a link of the archive's text goes from one page: a record of the archive to its page, an
// attachment or release asset to its copy under files/, http(s) and mailto as written, a fragment
// within the page as written; nothing else is a link.

/** The page of an issue or pull request, from a page `depth` below DIR. */
function itemPath(depth: number, repository: string, kind: 'issue' | 'pull', number: number): string {
  const [owner, name] = repository.split('/') as [string, string];
  return sitePath(depth, owner, name, kind === 'issue' ? 'issues' : 'pulls', `${number}.html`);
}

/**
 * Files a browser runs when opened from disk: a page, a drawing, a stylesheet of transforms. Their
 * copies are named `<name>.txt`, which a browser shows as text (a file:// page has no policy of ours).
 */
const ACTIVE = /\.(?:html?|xhtml?|xht|shtml|svgz?|xml|xsl|xslt|mht|mhtml|htc|hta|pdf)$/i;

/** The name an archive's file is copied under in files/: its own, or inert (ACTIVE). */
export function copyName(path: string): string {
  return ACTIVE.test(path) ? `${path}.txt` : path;
}

/** The copy of an archive's file (`attachments/…`, `releases/…`), if the archive holds it. */
export function filePath(index: SiteIndex, depth: number, path: string | undefined): string | undefined {
  if (path === undefined || !index.files.has(path)) return undefined;
  return sitePath(depth, 'files', ...copyName(path).split('/'));
}

export function linkEnv(index: SiteIndex, repository: RepositoryIndex | undefined, depth: number): LinkEnv {
  return {
    link(href) {
      const local = filePath(index, depth, archivePath(href) ?? index.attachments.get(href));
      if (local) return { href: local, local: true };
      if (href.startsWith('#')) return { href, local: true };
      const place = placeOf(href);
      const item = place?.item;
      const target = place && item ? index.repositories.get(place.repository.toLowerCase()) : undefined;
      // The service redirects /issues/N to /pull/N and back: either names the record numbered N.
      if (target && item && target.issues.has(item.number)) return { href: itemPath(depth, target.name, 'issue', item.number), local: true };
      if (target && item && target.pulls.has(item.number)) return { href: itemPath(depth, target.name, 'pull', item.number), local: true };
      return /^(?:https?:\/\/|mailto:)/i.test(href) ? { href, local: false } : undefined;
    },
    reference(number) {
      if (!repository) return undefined;
      if (repository.issues.has(number)) return itemPath(depth, repository.name, 'issue', number);
      if (repository.pulls.has(number)) return itemPath(depth, repository.name, 'pull', number);
      return undefined;
    },
  };
}
