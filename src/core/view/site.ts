import { lstatSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError, VerificationError } from '../../errors.js';
import { PACKAGE_ROOT } from '../../support/package-root.js';
import { inertText } from '../../support/outside-text.js';
import { fileError } from '../../support/system-errors.js';
import { moveInto } from '../archive/move-into.js';
import { outputDirectoryExists } from '../archive/output-directory.js';
import { copyName } from './links.js';
import { MetadataFormatError } from '../archive/metadata-records.js';
import { ArchiveVerificationError, verifiedReading, type VerifyOptions } from '../archive/verify.js';
import { makeWorkDirectory } from '../archive/work-directory.js';
import type { ItemEntry, SiteIndex, SlimRecord } from './model.js';
import { itemPage } from './pages/item.js';
import { itemListPage, milestonesPage, organizationPage } from './pages/lists.js';
import { releasesPage } from './pages/releases.js';
import { repositoryDir } from './pages/layout.js';
import { readMetadata } from './reading.js';
import { RecordTooLargeError } from './record-stream.js';
import { Spool } from './spool.js';

// `archive view`: a static site of the archive's metadata, made from the verified reading (or,
// with --no-verify, the plain reading, every page saying so) in a private directory beside DIR
// (or in it, when it exists), and moved into place only once all of it is written.

export interface ViewOptions extends Pick<VerifyOptions, 'onProgress' | 'onGitProgress' | 'signal'> {
  force?: boolean;
  /** false: read without verification (`--no-verify`). */
  verify?: boolean;
  /**
   * What the site leaves out: records that name nothing the archive holds (or by a URL of no
   * service name), and, without verification, the rest of a metadata file that breaks.
   */
  onNotice?: (message: string) => void;
}

export interface ViewReport {
  archive: string;
  directory: string;
  repositories: {
    name: string;
    issues: number;
    pull_requests: number;
    releases: number;
    milestones: number;
    comments: number;
    reviews: number;
    review_comments: number;
  }[];
  pages: number;
  files: number;
  verified: boolean;
}

const INSIDE_PREFIX = '.viewing-';

export async function viewArchive(archive: string, directory: string, options: ViewOptions = {}): Promise<ViewReport> {
  const dir = resolve(directory);
  const exists = outputDirectoryExists(dir, { force: options.force === true, leftover: INSIDE_PREFIX, what: 'for the site' });
  const parent = dirname(dir);
  await mkdir(parent, { recursive: true }).catch((error: NodeJS.ErrnoException) => {
    throw fileError(error, { action: 'create the directory', path: parent });
  });
  const work = await makeWorkDirectory(exists ? dir : parent, exists ? INSIDE_PREFIX : `.${basename(dir)}.viewing-`, 'where the site is made before it is moved into place');
  try {
    const site = join(work, 'site');
    const report = await makeSite(archive, directory, work, site, options);
    options.signal?.throwIfAborted();
    if (exists) await moveInto(site, dir, { force: options.force === true, shown: directory, whole: new Set() });
    else await rename(site, dir).catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOTEMPTY' || error.code === 'EEXIST'
        ? new UsageError(`${directory} was written to while the site was made`, { hint: 'run this again, with --force to replace the site\'s files there' })
        : fileError(error, { action: 'move the site to', path: directory });
    });
    return report;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function makeSite(archive: string, directory: string, work: string, site: string, options: ViewOptions): Promise<ViewReport> {
  const reading = join(work, 'reading');
  await mkdir(reading, { mode: 0o700 });
  const verified = options.verify !== false;
  let filesDir: string;
  if (verified) {
    const { report, kept } = await verifiedReading(archive, reading, { ...options, roomHint: 'free some space there, or write the site to another disk' });
    if (!report.ok) {
      throw new ArchiveVerificationError(report, { hint: `nothing was written to ${directory}; keep the service's copy of the archive, and download it again or report the problems above` });
    }
    filesDir = kept.filesDir;
  } else {
    const { scanArchive } = await import('../archive/scan.js');
    filesDir = join(reading, 'files');
    const progress = options.onProgress ? { onProgress: options.onProgress } : {};
    await scanArchive(archive, { filesTo: filesDir, signal: options.signal, ...progress });
  }
  const spoolDir = join(work, 'spool');
  await mkdir(spoolDir, { mode: 0o700 });
  const spool = new Spool(spoolDir);
  let index: SiteIndex;
  try {
    const unreadable = (file: string, reason: string) => options.onNotice?.(`${inertText(file)} was read only in part: ${inertText(reason)}`);
    index = await readMetadata(filesDir, spool, verified ? undefined : unreadable, options.signal);
  } catch (error) {
    if (error instanceof RecordTooLargeError || error instanceof MetadataFormatError) {
      throw new VerificationError(`${archive} cannot be viewed: its metadata ${error.message}`, { hint: `nothing was written to ${directory}` });
    }
    throw error;
  }
  if (index.passedOver > 0) {
    options.onNotice?.(`${index.passedOver} record${index.passedOver === 1 ? '' : 's'} of the metadata name no repository, issue or pull request the archive holds (or name one by a URL outside the service's names): not shown`);
  }
  await mkdir(site, { mode: 0o755 });
  const files = await keepFiles(filesDir, site, index);
  const pages = await writePages(index, spool, site, verified, options.signal);
  await writeAssets(site, index);
  if (spool.pagesCut > 0) {
    options.onNotice?.(`${spool.pagesCut} issue or pull request page${spool.pagesCut === 1 ? '' : 's'} hold more comments, events and reviews than a page takes (2 MiB): each shows the first, and says how many more there are`);
  }
  const repositories = [...index.repositories.values()].sort((a, b) => a.name.localeCompare(b.name)).map((repository) => ({
    name: repository.name,
    issues: repository.issues.size,
    pull_requests: repository.pulls.size,
    releases: repository.releases,
    milestones: repository.milestones.length,
    comments: repository.comments,
    reviews: repository.reviews,
    review_comments: repository.review_comments,
  }));
  return { archive, directory, repositories, pages, files, verified };
}

/** The archive's `attachments/` and `releases/` moved to `files/`: regular files only, at the paths the reading checked. */
async function keepFiles(filesDir: string, site: string, index: SiteIndex): Promise<number> {
  const target = join(site, 'files');
  await mkdir(target);
  for (const top of ['attachments', 'releases']) {
    const from = join(filesDir, top);
    const entries = await readdir(from, { recursive: true, withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const path = join(entry.parentPath, entry.name);
      if (entry.isFile()) {
        const archived = path.slice(filesDir.length + 1).split('\\').join('/');
        const inert = join(filesDir, copyName(archived));
        if (inert !== path) {
          // `x.svg` beside an `x.svg.txt` of the archive's: the drawing is not copied, never the other replaced.
          if (lstatSync(inert, { throwIfNoEntry: false })) {
            await rm(path, { force: true });
            continue;
          }
          await rename(path, inert);
        }
        index.files.add(archived);
      } else if (!entry.isDirectory()) await rm(path, { force: true });
    }
    if (entries.length > 0) await rename(from, join(target, top));
  }
  return index.files.size;
}

async function writePages(index: SiteIndex, spool: Spool, site: string, verified: boolean, signal?: AbortSignal): Promise<number> {
  const userName = (url: unknown) => (typeof url === 'string' ? index.users.get(url) ?? url.split('/').pop() ?? url : 'ghost');
  let pages = 0;
  const write = async (path: string, html: string) => {
    await writeFile(join(site, path), html);
    pages++;
  };
  await write('index.html', organizationPage(index, verified));
  /** The pages written from the spool, by the number of their lines there: each group of them is read once. */
  const fromSpool: { page: number; make: () => Promise<void> }[] = [];
  for (const repository of index.repositories.values()) {
    signal?.throwIfAborted();
    const [owner, name] = repositoryDir(repository.name);
    const base = join(owner, name);
    await mkdir(join(site, base, 'issues'), { recursive: true });
    await mkdir(join(site, base, 'pulls'), { recursive: true });
    await write(join(base, 'index.html'), itemListPage(index, repository, 'issue', verified, userName));
    await write(join(base, 'pulls.html'), itemListPage(index, repository, 'pull', verified, userName));
    await write(join(base, 'milestones.html'), milestonesPage(index, repository, verified));
    fromSpool.push({
      page: repository.releaseFile,
      make: async () => write(join(base, 'releases.html'), releasesPage(index, repository, await spool.read<SlimRecord>(repository.releaseFile), verified, userName)),
    });
    for (const [kind, rows] of [['issue', repository.issues], ['pull', repository.pulls]] as const) {
      for (const row of rows.values()) {
        fromSpool.push({
          page: row.file,
          make: async () => {
            const entries = await spool.read<ItemEntry>(row.file);
            await write(join(base, kind === 'issue' ? 'issues' : 'pulls', `${row.number}.html`), itemPage({ index, repository, kind, row, entries, verified, userName, leftOut: spool.leftOut(row.file) }));
          },
        });
      }
    }
  }
  fromSpool.sort((a, b) => a.page - b.page);
  for (const { make } of fromSpool) {
    signal?.throwIfAborted();
    await make();
  }
  return pages;
}

/** The shipped script and stylesheet, and a class for each label colour (the policy allows no style attribute). */
async function writeAssets(site: string, index: SiteIndex): Promise<void> {
  const assets = join(site, 'assets');
  await mkdir(assets);
  await copyFile(new URL('web/site.js', PACKAGE_ROOT), join(assets, 'site.js'));
  const colors = new Set<string>();
  for (const repository of index.repositories.values()) {
    for (const label of repository.labels.values()) if (label.color) colors.add(label.color);
  }
  const rules = [...colors].sort().map((color) => `.c-${color} { background: #${color}; color: ${dark(color) ? '#fff' : '#1f2328'}; }`);
  await writeFile(join(assets, 'site.css'), `${await readFile(new URL('web/site.css', PACKAGE_ROOT), 'utf8')}\n/* label colours of this archive */\n${rules.join('\n')}\n`);
}

function dark(color: string): boolean {
  const [r, g, b] = [0, 2, 4].map((at) => parseInt(color.slice(at, at + 2), 16)) as [number, number, number];
  return 0.299 * r + 0.587 * g + 0.114 * b < 150;
}
