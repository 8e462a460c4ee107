import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { buildProgram } from '../../src/program.js';

// docs/cli.md is the users' contract: every command, flag and exit code the program has is in it.
const DOC = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');

/** The text under each `## ` or `### ` heading, by heading. */
function sections(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of text.split(/^(?=#{2,3} )/m)) {
    const [title, ...body] = part.split('\n');
    if (title?.startsWith('#')) found.set(title.replace(/^#+ /, '').trim(), body.join('\n'));
  }
  return found;
}

/** Whether `text` names `flag` itself, not only a longer flag that starts with it (`--exclude-metadata`). */
function mentions(text: string, flag: string): boolean {
  return new RegExp(`${flag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`).test(text);
}

function commandPaths(program: Command): { path: string[]; command: Command }[] {
  const out: { path: string[]; command: Command }[] = [];
  const walk = (parent: Command, path: string[]) => {
    for (const child of parent.commands) {
      if (child.name() === 'help') continue;
      out.push({ path: [...path, child.name()], command: child });
      walk(child, [...path, child.name()]);
    }
  };
  walk(program, []);
  return out;
}

describe('docs/cli.md', () => {
  const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: {} };
  const program = buildProgram(io, new AbortController().signal);
  const bySection = sections(DOC);

  it('documents every global option', () => {
    const global = bySection.get('Global options') ?? '';
    const missing = program.options.map((option) => option.long ?? option.short).filter((flag) => !mentions(global, flag as string));
    expect(missing).toEqual([]);
  });

  it('documents every command and each of its options in its own section', () => {
    const missing: string[] = [];
    const commands = commandPaths(program);
    expect(commands.length).toBeGreaterThan(20);
    for (const { path, command } of commands) {
      const name = path.join(' ');
      // A command has its own section, or a row in its parent's (`auth login` under `auth`).
      const section = bySection.get(name) ?? bySection.get(path[0] as string);
      if (section === undefined || (!bySection.has(name) && !section.includes(`\`${name}`))) {
        missing.push(name);
        continue;
      }
      for (const option of command.options) {
        const flag = option.long ?? option.short;
        if (flag !== '--help' && !mentions(section, flag as string)) missing.push(`${name} ${flag}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('lists every exit code the program uses', () => {
    const table = bySection.get('Exit codes') ?? '';
    const listed = [...table.matchAll(/^\| (\d+) \|/gm)].map(([, code]) => Number(code));
    expect(Object.values(ExitCode).filter((code) => !listed.includes(code))).toEqual([]);
  });
});
