import type { LinkEnv } from './markdown.js';
import type { RepositoryIndex, SiteIndex } from './model.js';
import { repositoryDir, sitePath } from './pages/layout.js';
import { archivePath } from './reading.js';
import { placeOf } from './record-urls.js';

// Where a link of the archive's text goes from one page: a record of the archive to its page, an
// attachment or release asset to its copy under files/, http(s) and mailto as written, a fragment
// within the page as written; nothing else is a link.

/** The page of an issue or pull request, from a page `depth` below DIR. */
function itemPath(depth: number, repository: string, kind: 'issue' | 'pull', number: number): string {
  const [owner, name] = repositoryDir(repository);
  return sitePath(depth, owner, name, kind === 'issue' ? 'issues' : 'pulls', `${number}.html`);
}

/**
 * The files kept under their own name: images, plain text, and what a browser only downloads. Any
 * other is copied as `<name>.txt`, which a browser shows as text: opened from disk, a page of the
 * archive's (`.html`, `.shtm`, `.svg`, `.rss`, `.xsd`…, or a type it sniffs) has no policy of ours.
 */
const KEPT = /\.(?:png|jpe?g|gif|webp|bmp|ico|avif|txt|md|log|csv|diff|patch|zip|gz|tgz|tar|bz2|xz|zst|7z|rar|exe|msi|dmg|deb|rpm|apk|jar|whl|iso|bin)$/i;

/** The name an archive's file is copied under in files/: its own, or inert. */
export function copyName(path: string): string {
  return KEPT.test(path) ? path : `${path}.txt`;
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
