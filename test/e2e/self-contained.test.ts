import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A clone must build and pass its tests with nothing beside it, and users of the package have only
// what is in it: no tracked file may point at the reference folder that sat next to the project
// while it was written. The patterns are assembled from parts so this file does not match itself.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FOLDER = ['sha', 'red'].join('');
const OUTSIDE = [
  ['..', FOLDER].join('/'),
  ...['spec', 'fixtures', 'CLI.md', 'ARCHITECTURE.md'].map((name) => [FOLDER, name].join('/')),
];
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ANY_REFERENCE = new RegExp(OUTSIDE.map(escape).join('|'));
// The lock file names third-party packages (a scoped `@x/<folder>/spec` is a legal package path), so
// there only a relative path that leaves the repository counts: that would be a real dependency on it.
const LEAVING_THE_REPOSITORY = new RegExp(escape(OUTSIDE[0] as string));

/** The sections code and docs cite; other pages and comments link to them, so none may go. */
const SERVICE_ANCHORS = [
  'webhook-envelope', 'migration', 'repository', 'owner', 'migration-states', 'repository-locks', 'archive',
  'commit-status-states', 'endpoints', 'list-migrations', 'start-migration', 'migration-status', 'download-archive',
  'delete-archive', 'unlock-repository', 'migration-repositories', 'webhook-delivery', 'repository-dispatch',
  'authentication', 'delivery-headers', 'delivery-rules', 'event-catalogue', 'published-schemas', 'operations-and-events', 'errors',
  'limits', 'versioning',
];

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
function githubSlug(title: string): string {
  return title.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Tracked files; a tree walk where there is no git checkout (an unpacked source archive). */
function projectFiles(): string[] {
  try {
    return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  } catch {
    const skip = new Set(['.git', 'node_modules', 'dist', '.tmp', 'coverage']);
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        if (skip.has(entry.name)) return [];
        const path = join(dir, entry.name);
        return entry.isDirectory() ? walk(path) : entry.isFile() ? [relative(ROOT, path)] : [];
      });
    return walk(ROOT);
  }
}

type Reader = (file: string) => string | undefined;

const readTracked: Reader = (file) => {
  try {
    return readFileSync(join(ROOT, file), 'utf8');
  } catch {
    return undefined; // deleted in the working tree but still in the index
  }
};

/** `file:line: text` for every line that refers outside the repository. */
function referencesOutside(files: string[], read: Reader = readTracked): string[] {
  return files.flatMap((file) => {
    // Third-party payloads, kept byte for byte: their text is data, not a reference of ours.
    if (file.startsWith('test/fixtures/')) return [];
    const pattern = file === 'package-lock.json' ? LEAVING_THE_REPOSITORY : ANY_REFERENCE;
    const lines = read(file)?.split('\n') ?? [];
    return lines.flatMap((line, index) => (pattern.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
  });
}

describe('the project stands on its own', () => {
  it('has no tracked file that refers to a folder outside the repository', () => {
    const files = projectFiles();
    expect(files).toContain('package.json');
    expect(referencesOutside(files)).toEqual([]);
  });

  it('cites only sections that docs/service.md has', () => {
    const page = readFileSync(join(ROOT, 'docs/service.md'), 'utf8');
    const anchors = new Set([
      ...[...page.matchAll(/^#{1,6} (.+)$/gm)].map(([, title]) => githubSlug(title as string)),
      ...[...page.matchAll(/<a id="([^"]+)"/g)].map(([, id]) => id as string),
    ]);
    expect([...SERVICE_ANCHORS].filter((anchor) => !anchors.has(anchor))).toEqual([]);
    const cited = projectFiles()
      .filter((file) => !file.startsWith('test/fixtures/') && file !== 'package-lock.json')
      .flatMap((file) =>
        [...(readTracked(file) ?? '').matchAll(/service\.md#([\w-]+)/g)].map(([, anchor]) => ({ file, anchor: anchor as string })),
      );
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter(({ anchor }) => !anchors.has(anchor))).toEqual([]);
  });

  it('would notice such a reference in a file of ours, but not in third-party text', () => {
    const files: Record<string, string> = {
      'README.md': `intro\nsee ${OUTSIDE[0]}/CLI.md`,
      'test/e2e/x.test.ts': `new URL('../../../${OUTSIDE[2]}/api/x.json')`,
      'src/commands/status.ts': 'import { addWaitOptions } from \'./shared.js\'; // a shared agent',
      'test/fixtures/webhooks/push/push.json': `"modified": ["${OUTSIDE[0]}/x"]`,
      'package-lock.json': `"node_modules/@acme/${OUTSIDE[1]}": {}`,
    };
    expect(referencesOutside(Object.keys(files), (file) => files[file])).toEqual([
      `README.md:2: see ${OUTSIDE[0]}/CLI.md`,
      `test/e2e/x.test.ts:1: new URL('../../../${OUTSIDE[2]}/api/x.json')`,
    ]);
    files['package-lock.json'] = `"resolved": "file:${OUTSIDE[0]}/lib"`;
    expect(referencesOutside(['package-lock.json'], (file) => files[file])).toHaveLength(1);
  });
});
