import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOGUE } from '../../src/webhook/catalogue.js';
import { BIN, runCli } from '../helpers/run-cli.js';

const FILES = { bash: 'svc-migrate.bash', zsh: '_svc-migrate', fish: 'svc-migrate.fish' } as const;
const has = (shell: string) => spawnSync(shell, ['--version'], { stdio: 'ignore' }).status === 0;

describe('shell completions', () => {
  it.each(Object.entries(FILES))('completions/ holds exactly what `completion %s` prints (run `npm run completions`)', async (shell, file) => {
    const result = await runCli(['completion', shell]);
    expect(result.code).toBe(0);
    expect(readFileSync(new URL(`../../completions/${file}`, import.meta.url), 'utf8')).toBe(result.stdout);
  });

  it('every install line of the README and of `completion --help` works on a fresh account, each the same', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /Shell completions[^\n]*\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const lines = block.split('\n').filter(Boolean);
    expect(lines.map((line) => /completion (\w+)/.exec(line)?.[1])).toEqual(['bash', 'zsh', 'fish']);
    const help = (await runCli(['completion', '--help'])).stdout;
    for (const line of lines) expect(help).toContain(`  ${line}`);
    // The built binary as the installed command: `svc-migrate` on PATH.
    const bin = mkdtempSync(join(tmpdir(), 'svc-bin-'));
    writeFileSync(join(bin, 'svc-migrate'), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`);
    chmodSync(join(bin, 'svc-migrate'), 0o755);
    for (const line of lines) {
      const home = mkdtempSync(join(tmpdir(), 'svc-home-'));
      const ran = spawnSync('bash', ['-c', line], { encoding: 'utf8', env: { ...process.env, HOME: home, PATH: `${bin}:${process.env.PATH}` } });
      expect(ran.status, `${line}\n${ran.stderr}`).toBe(0);
      const shell = /completion (\w+)/.exec(line)?.[1] as keyof typeof FILES;
      const written = /> (\S+)/.exec(line)?.[1]?.replace(/^~/, home) ?? '';
      expect(readFileSync(written, 'utf8')).toBe(readFileSync(new URL(`../../completions/${FILES[shell]}`, import.meta.url), 'utf8'));
    }
  });

  for (const [shell, file] of Object.entries(FILES)) {
    it.skipIf(!has(shell))(`${shell} accepts the script (-n)${has(shell) ? '' : ` (skipped: ${shell} is not installed)`}`, () => {
      const check = spawnSync(shell, ['-n', new URL(`../../completions/${file}`, import.meta.url).pathname], { encoding: 'utf8' });
      expect(check.status, check.stderr).toBe(0);
    });
  }

  it('completes subcommands, options and option values in bash', () => {
    const script = join(mkdtempSync(join(tmpdir(), 'svc-comp-')), 'test.sh');
    writeFileSync(
      script,
      `source ${new URL('../../completions/svc-migrate.bash', import.meta.url).pathname}
t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); COMPREPLY=(); _svc_migrate; echo "\${COMPREPLY[*]}"; }
t svc-migrate list --state ""
t svc-migrate webhook send --content-type ""
t svc-migrate completion z
t svc-migrate webhook l
t svc-migrate download 5 --ou
t svc-migrate ex
`,
    );
    const result = spawnSync('bash', [script], { encoding: 'utf8' });
    expect(result.stdout.split('\n').slice(0, 6)).toEqual([
      'pending exporting exported failed',
      'json form',
      'zsh',
      'listen',
      '--output',
      'export',
    ]);
  });

  it('bash offers no flags for an empty word, and files only where a file is wanted', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-comp-'));
    writeFileSync(join(dir, 'acme.tar.gz'), '');
    const script = join(dir, 'test.sh');
    writeFileSync(
      script,
      `source ${new URL('../../completions/svc-migrate.bash', import.meta.url).pathname}
cd ${dir}
t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); COMPREPLY=(); _svc_migrate; echo "[\${COMPREPLY[*]}]"; }
t svc-migrate status ""
t svc-migrate --org ""
t svc-migrate list --org ""
t svc-migrate status --w
t svc-migrate archive verify ac
t svc-migrate start --repos-file ac
complete -p svc-migrate
`,
    );
    const result = spawnSync('bash', [script], { encoding: 'utf8' });
    expect(result.stdout.trim().split('\n')).toEqual([
      // Nothing to complete: before, every flag was offered and bash inserted their common "-".
      '[]',
      // No fallback to the directory's files after an option that takes a name (`-o default`).
      '[]',
      '[]',
      '[--wait]',
      '[acme.tar.gz]',
      '[acme.tar.gz]',
      'complete -F _svc_migrate svc-migrate',
    ]);
  });

  it('offers the catalogue\'s event names for send --event, listen --events (after the last comma) and events NAME', () => {
    const script = join(mkdtempSync(join(tmpdir(), 'svc-comp-')), 'test.sh');
    writeFileSync(
      script,
      `source ${new URL('../../completions/svc-migrate.bash', import.meta.url).pathname}
t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); COMPREPLY=(); _svc_migrate; echo "[\${COMPREPLY[*]}]"; }
t svc-migrate webhook send --url 3000 --event iss
t svc-migrate webhook send --event pull_request_rev
t svc-migrate webhook listen --events workflow_
t svc-migrate webhook listen --port 0 --events push,pull_request_review_
t svc-migrate webhook events dependency
t svc-migrate webhook events ""
`,
    );
    const result = spawnSync('bash', [script], { encoding: 'utf8' });
    const lines = result.stdout.trim().split('\n');
    expect(lines.slice(0, 5)).toEqual([
      '[issue_comment issues]',
      '[pull_request_review pull_request_review_comment pull_request_review_thread]',
      '[workflow_dispatch workflow_job workflow_run]',
      // The entries before the last comma are kept.
      '[push,pull_request_review_comment push,pull_request_review_thread]',
      '[dependency_alert]',
    ]);
    expect(lines[5]?.slice(1, -1).split(' ')).toEqual([...CATALOGUE.keys()].sort());
  });

  it.skipIf(!has('fish'))(`fish offers event names too, an --events entry after the last comma${has('fish') ? '' : ' (skipped: fish is not installed)'}`, () => {
    const file = new URL('../../completions/svc-migrate.fish', import.meta.url).pathname;
    const complete = (line: string) =>
      spawnSync('fish', ['--no-config', '-c', `source ${file}; complete -C '${line}'`], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map((entry) => entry.split('\t')[0]);
    expect(complete('svc-migrate webhook send --event iss').sort()).toEqual(['issue_comment', 'issues']);
    expect(complete('svc-migrate webhook listen --events push,pull_request_review_').sort()).toEqual(['push,pull_request_review_comment', 'push,pull_request_review_thread']);
    expect(complete('svc-migrate webhook events dependency')).toEqual(['dependency_alert']);
  });
});
