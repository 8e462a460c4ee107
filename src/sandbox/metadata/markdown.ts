import { type RepoContext, person } from './numbering.js';

// The text of issues, pull requests, comments and reviews: Markdown as people write it on the
// service, so that whatever reads an archive meets code blocks, tables, task lists, links, images,
// mentions, `#123` references and text beyond ASCII. The first issue and the first pull request of
// each repository carry all of it; the others are short, and still name people and numbers.

const ISSUE_TITLES = [
  'Export garbles names: café, 日本語, 🎉',
  'Archive verify is slow on large repositories',
  'Crash when the token expires mid-download',
  'Documenter la commande « export »',
  'エクスポートの進捗表示を改善する',
  'Support 🚀 emoji in label names',
  'Typo in the README',
];

const PULL_TITLES = [
  'Add the code',
  'Handle non-ASCII names (é, 日本語)',
  'Speed up verification of packed repositories',
  'Retry on 502 from storage',
  'Übersetzung der Hilfe',
];

/** Titles repeat past the list, numbered, so that every title of a repository is its own. */
function titled(list: string[], index: number): string {
  const round = Math.floor(index / list.length);
  const title = list[index % list.length] as string;
  return round === 0 ? title : `${title} (${round + 1})`;
}

export const issueTitle = (index: number) => titled(ISSUE_TITLES, index);
export const pullTitle = (index: number) => titled(PULL_TITLES, index);

/** An earlier number to refer to, or the next one for number 1. */
const earlier = (number: number) => (number > 1 ? number - 1 : 2);

export function issueBody(ctx: RepoContext, number: number, index: number, image: string | undefined): string {
  if (index > 0) {
    const code = index % 5 === 4 ? '\n\n```sh\nsvc-migrate archive verify archive.tar.gz --json\n```' : '';
    return `Seen again on ${ctx.repo.full_name}; looks related to #${earlier(number)}.${code}\n\ncc @${person(ctx, number + 1).login}`;
  }
  return [
    '## Steps to reproduce',
    '',
    `1. Export **${ctx.repo.full_name}** with \`svc-migrate export\``,
    '2. Open the archive: the names of the café\'s 日本語 files come out wrong 😕',
    '',
    '| name | expected | actual |',
    '| --- | --- | --- |',
    '| café | `café` | `cafÃ©` |',
    '| 日本語 | `日本語` | `???` |',
    '| 🎉 | `🎉` | `ð` |',
    '',
    '```ts',
    'const name = \'café\';',
    'console.log(name.normalize(\'NFC\') === name); // true',
    '```',
    '',
    '- [x] reproduced on the default branch',
    '- [ ] reproduced on the last release',
    '- [ ] fixed by #3',
    '',
    `See #2, the [README](${ctx.url}/blob/${ctx.repo.default_branch}/README.md) and <https://unicode.org/reports/tr15/>.`,
    ...(image ? ['', `![screenshot of the archive](${image})`] : []),
    '',
    `cc @${person(ctx, 1).login} @${person(ctx, 2).login}`,
  ].join('\n');
}

export function pullBody(ctx: RepoContext, number: number, index: number): string {
  if (index > 0) return `Follows #${earlier(number)}. Ready for a look, @${person(ctx, number + 1).login}.`;
  return [
    'Adds the code, and closes #2.',
    '',
    '### Changes',
    '',
    '- [x] `src/index.js` exports the name',
    '- [x] the README says what it is',
    '- [ ] a test (next pull request)',
    '',
    '```diff',
    '+export const name = "…";',
    '```',
    '',
    '| check | before | after |',
    '| --- | ---: | ---: |',
    '| size | 0 KiB | 1 KiB |',
    '| entrées | 0 | 2 |',
    '',
    `Tested by @${person(ctx, 1).login} — merci ! 🙏 レビューお願いします。`,
  ].join('\n');
}

const COMMENTS = [
  (ctx: RepoContext, number: number) => `I can reproduce this on ${ctx.repo.default_branch}. @${person(ctx, number).login}, can you look?`,
  (_ctx: RepoContext, number: number) => `Same as #${earlier(number)}, I think.\n\n> the names come out wrong\n\nYes: \`NFD\` vs \`NFC\`.`,
  () => 'Merci ! Ça marche maintenant. 👍',
  () => '```json\n{ "state": "exported", "repositories": 1 }\n```\nThat is what the service answered.',
  () => 'ありがとうございます。確認しました。',
];

export function commentBody(ctx: RepoContext, number: number, which: number, attachment: string | undefined): string {
  const text = (COMMENTS[(number + which) % COMMENTS.length] as (ctx: RepoContext, number: number) => string)(ctx, number);
  return attachment ? `${text}\n\nThe log: [build-log.txt](${attachment})` : text;
}

export function reviewBody(ctx: RepoContext, state: number, image: string | undefined): string {
  if (state === 40) return 'Looks good to me. ✅';
  if (state === 30) return `A few changes, please; see the comments. @${person(ctx, 0).login}${image ? `\n\n![what I see](${image})` : ''}`;
  return '';
}

export function reviewCommentBody(ctx: RepoContext, reply: boolean): string {
  if (reply) return 'Done: the name is quoted now. 🙂';
  return `Should this quote the name?\n\n\`\`\`suggestion\nexport const name = ${JSON.stringify(ctx.repo.name)};\n\`\`\``;
}

/** The change a review thread is about: the code of the git data's second commit. */
export function diffHunk(ctx: RepoContext): { path: string; hunk: string; line: number } {
  const hunk = `@@ -0,0 +1,2 @@\n+// ${ctx.repo.full_name}\n+export const name = ${JSON.stringify(ctx.repo.name)};`;
  return { path: 'src/index.js', hunk, line: 2 };
}
