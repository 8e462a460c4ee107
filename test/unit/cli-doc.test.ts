import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript build script without types
import { CLI_DOC, renderCliDoc } from '../../scripts/build-cli-doc.js';
import { ExitCode } from '../../src/errors.js';
import { buildProgram } from '../../src/program.js';

// docs/cli.md is the users' contract: its usage lines, arguments and options are the program's own
// (scripts/build-cli-doc.js writes them from the commander tree); the prose holds what it cannot say.
const DOC: string = readFileSync(CLI_DOC, 'utf8');
const render = (doc: string): string => renderCliDoc(doc, buildProgram);
const MARKER = '<!-- generated from the commander tree by npm run docs:cli; do not edit:';

/** Each generated section's text by its name, so that a failure shows which one differs. */
function generated(doc: string): Record<string, string> {
  const pattern = /<!-- generated from the commander tree by npm run docs:cli; do not edit: (.+?) -->\n([\s\S]*?)<!-- end generated -->/g;
  return Object.fromEntries([...doc.matchAll(pattern)].map(([, key, body]) => [key, body]));
}

describe('docs/cli.md', () => {
  it('says of every command, argument and option what the program says (run `npm run docs:cli` when this fails)', () => {
    const fresh = render(DOC);
    expect(generated(DOC), 'docs/cli.md differs from the commander tree: run `npm run docs:cli`').toEqual(generated(fresh));
    expect(Object.keys(generated(DOC)).length).toBeGreaterThan(20);
    expect(fresh).toBe(DOC);
  });

  it('has a generated section for each command, and puts back one edited by hand', () => {
    const fresh = render(DOC);
    const edited = fresh.replace(/(do not edit: start -->\n)[^\n]*\n/, '$1');
    expect(edited).not.toBe(fresh);
    expect(render(edited)).toBe(fresh);
    const withoutSandbox = DOC.replace(`${MARKER} sandbox -->`, '<!-- gone -->');
    expect(() => render(withoutSandbox)).toThrow(/no generated section for "sandbox"/);
    expect(() => render(`${DOC}\n### nope\n\n${MARKER} nope -->\n<!-- end generated -->\n`)).toThrow(/"nope", which the program does not have/);
    const underAnotherHeading = DOC.replace('### unlock\n', '### unlocking\n');
    expect(() => render(underAnotherHeading)).toThrow(/must follow its heading, "### unlock"/);
  });

  it('lists every exit code the program uses', () => {
    const table = /^## Exit codes\n([\s\S]*?)^## /m.exec(DOC)?.[1] ?? '';
    const listed = [...table.matchAll(/^\| (\d+) \|/gm)].map(([, code]) => Number(code));
    expect(listed.length).toBeGreaterThan(0);
    expect(Object.values(ExitCode).filter((code) => !listed.includes(code))).toEqual([]);
  });
});
