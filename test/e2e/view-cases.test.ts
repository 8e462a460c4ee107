import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { untarred } from '../helpers/git-remotes.js';
import { GIT_SETUP } from '../helpers/restore-archives.js';
import { runCli } from '../helpers/run-cli.js';
import { sandboxArchive } from '../helpers/sandbox.js';

// `archive view` on the sandbox's archive changed as a tester changed it: an owner named as the
// site's own directories, review states and events named as an object's prototype keys, an
// attachment a browser runs that is no `.html`, an issue of more comments than a page holds.

type Json = Record<string, any>;
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-view-case-'));
const view = (args: string[]) => runCli(['archive', 'view', ...args], { env: GIT_SETUP });

let original: string;
beforeAll(async () => {
  original = await sandboxArchive(['widgets']);
}, 120_000);

/** The sandbox's archive with `change` made to its untarred tree, packed again with GNU tar. */
async function changed(change: (tree: string) => void): Promise<string> {
  const tree = await untarred(original);
  change(tree);
  const archive = join(tempDir(), 'a.tar.gz');
  execFileSync('tar', ['-C', tree, '-czf', archive, '.']);
  return archive;
}

const jsonFiles = (tree: string, kind: string) => readdirSync(tree).filter((name) => name.startsWith(`${kind}_`) && name.endsWith('.json'));
function editRecords(tree: string, kind: string, edit: (records: Json[]) => void): void {
  for (const name of jsonFiles(tree, kind)) {
    const records = JSON.parse(readFileSync(join(tree, name), 'utf8')) as Json[];
    edit(records);
    writeFileSync(join(tree, name), JSON.stringify(records));
  }
}

describe('archive view, the cases a tester found', () => {
  it('an owner named as the site\'s own assets/ directory: its pages under assets~/, the site\'s stylesheet and script intact', async () => {
    const archive = await changed((tree) => {
      for (const name of readdirSync(tree).filter((file) => file.endsWith('.json'))) {
        writeFileSync(join(tree, name), readFileSync(join(tree, name), 'utf8').replaceAll('octo-org', 'assets'));
      }
      renameSync(join(tree, 'repositories', 'octo-org'), join(tree, 'repositories', 'assets'));
    });
    const dir = join(tempDir(), 'site');
    const result = await view([archive, '-o', dir]);
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(dir, 'assets~', 'widgets', 'index.html'))).toBe(true);
    expect(readdirSync(join(dir, 'assets')).sort()).toEqual(['site.css', 'site.js']);
    expect(readFileSync(join(dir, 'index.html'), 'utf8')).toContain('href="assets~/widgets/index.html"');
  }, 120_000);

  it('a review state and an event named __proto__ or constructor are words, not a crash (exit 0)', async () => {
    const archive = await changed((tree) => {
      editRecords(tree, 'pull_request_reviews', (records) => {
        if (records[0]) records[0].state = '__proto__';
      });
      editRecords(tree, 'issue_events', (records) => {
        if (records[0]) records[0].event = 'constructor';
        if (records[1]) records[1].event = '__proto__';
      });
    });
    const result = await view([archive, '-o', join(tempDir(), 'site')]);
    expect(result.code, result.stderr).toBe(0);
  }, 120_000);

  it('an attachment a browser would run though not named .html (.shtm, .rss, .xsd, no extension) is copied as <name>.txt; an image keeps its name', async () => {
    const names = ['evil.shtm', 'feed.rss', 'schema.xsd', 'README', 'shot.png'];
    const archive = await changed((tree) => {
      mkdirSync(join(tree, 'attachments', 'case'), { recursive: true });
      for (const name of names) writeFileSync(join(tree, 'attachments', 'case', name), '<html><script>window.pwned = 1</script></html>');
      editRecords(tree, 'issues', (records) => {
        if (records[0]) records[0].body = names.map((name) => `[${name}](tarball://root/attachments/case/${name})`).join('\n');
      });
    });
    const dir = join(tempDir(), 'site');
    const result = await view([archive, '-o', dir]);
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(join(dir, 'files', 'attachments', 'case')).sort()).toEqual(['README.txt', 'evil.shtm.txt', 'feed.rss.txt', 'schema.xsd.txt', 'shot.png']);
  }, 120_000);

  it('an issue of more comments than a page holds: its page shows the first, says how many more, and the run says so', async () => {
    const archive = await changed((tree) => {
      editRecords(tree, 'issue_comments', (records) => {
        const first = records[0] as Json;
        for (let i = 0; i < 3000; i++) records.push({ ...first, url: `${String(first.url)}-${i}`, body: `comment ${i} ${'x'.repeat(1000)}` });
      });
    });
    const dir = join(tempDir(), 'site');
    const result = await view([archive, '-o', dir]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/hold more comments, events and reviews than a page takes \(2 MiB\)/);
    const pages = readdirSync(join(dir, 'octo-org', 'widgets', 'issues')).map((name) => readFileSync(join(dir, 'octo-org', 'widgets', 'issues', name), 'utf8'));
    expect(pages.some((html) => /\d+ more comments, events and reviews are in the archive's metadata/.test(html))).toBe(true);
  }, 120_000);
});
