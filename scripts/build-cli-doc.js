// Writes the generated sections of docs/cli.md from the program's own commander tree, as gh makes
// its manual: each command's usage, description, arguments, options and help examples, the global
// options and the list of commands. Run `npm run docs:cli` after changing a command, an option or a
// description; test/unit/cli-doc.test.ts fails while docs/cli.md differs from what this writes.
// Only commander's public Help API and Command/Option/Argument properties are read.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CLI_DOC = fileURLToPath(new URL('../docs/cli.md', import.meta.url));

/** A generated section: everything between the markers is replaced; `key` names what goes there. */
const SECTION = /<!-- generated from the commander tree by npm run docs:cli; do not edit: (.+?) -->\n[\s\S]*?<!-- end generated -->/g;
const begin = (key) => `<!-- generated from the commander tree by npm run docs:cli; do not edit: ${key} -->`;
const END = '<!-- end generated -->';
const ROOT = 'svc-migrate';
const GLOBAL_OPTIONS = 'global options';
const COMMAND_LIST = 'commands';

/**
 * docs/cli.md with every generated section written anew from the program. `buildProgram` is
 * src/program.ts's (or dist/program.js's). Throws when a command has no section of its own, under a
 * heading of its name, or a section names nothing the program has.
 */
export function renderCliDoc(doc, buildProgram) {
  const { program, afterHelp } = programWithHelpText(buildProgram);
  const commands = commandTree(program);
  const sections = new Map([
    [ROOT, () => commandSection(program, afterHelp(program))],
    [GLOBAL_OPTIONS, () => optionTable(program, program.createHelp().visibleOptions(program))],
    [COMMAND_LIST, () => subcommandTable(program)],
    ...commands.map(({ path, command }) => [path, () => commandSection(command, afterHelp(command))]),
  ]);
  const seen = new Set();
  const out = doc.replace(SECTION, (_, key, offset) => {
    const render = sections.get(key);
    if (!render) throw new Error(`docs/cli.md has a generated section for "${key}", which the program does not have: remove it`);
    if (seen.has(key)) throw new Error(`docs/cli.md has two generated sections for "${key}"`);
    seen.add(key);
    if (commands.some((c) => c.path === key) && headingBefore(doc, offset) !== `### ${key}`) {
      throw new Error(`the generated section of "${key}" must follow its heading, "### ${key}", so that links to it work`);
    }
    return `${begin(key)}\n${render()}${END}`;
  });
  const missing = [...sections.keys()].filter((key) => !seen.has(key));
  if (missing.length > 0) {
    throw new Error(`docs/cli.md has no generated section for ${missing.map((k) => `"${k}"`).join(', ')}: add "### <command>", then\n${begin('<command>')}\n${END}`);
  }
  return out;
}

/**
 * The program built with its help printed into a string, and the text each command's help prints
 * after commander's part (examples, the workflow): `addHelpText` has no getter, `outputHelp` prints it.
 */
function programWithHelpText(buildProgram) {
  let printed = '';
  const sink = { write: (text) => ((printed += text), true) };
  const io = { stdin: process.stdin, stdout: sink, stderr: sink, env: {} };
  const program = buildProgram(io, new AbortController().signal);
  const afterHelp = (command) => {
    printed = '';
    command.outputHelp();
    const own = command.helpInformation();
    const at = printed.indexOf(own);
    if (at !== 0) throw new Error(`the help of "${command.name()}" prints text before commander's: docs:cli only takes text after it`);
    return printed.slice(own.length);
  };
  return { program, afterHelp };
}

/** Every command below the program, depth first, in the order its help lists them (not `help`). */
function commandTree(program) {
  const out = [];
  const walk = (parent, prefix) => {
    for (const command of parent.createHelp().visibleCommands(parent)) {
      if (!parent.commands.includes(command)) continue; // commander's implicit `help [command]`
      const path = `${prefix}${command.name()}`;
      out.push({ path, command });
      walk(command, `${path} `);
    }
  };
  walk(program, '');
  return out;
}

function headingBefore(doc, offset) {
  const lines = doc.slice(0, offset).trimEnd().split('\n');
  return lines[lines.length - 1];
}

/** Usage and description, then what the command's help lists: arguments, options, subcommands, examples. */
function commandSection(command, after) {
  const help = command.createHelp();
  const parts = [`\`${help.commandUsage(command)}\` — ${text(help.commandDescription(command))}\n`];
  const args = help.visibleArguments(command);
  if (args.length > 0) {
    parts.push(table(['argument', 'meaning'], args.map((arg) => [code(argumentTerm(arg)), text(help.argumentDescription(arg))])));
  }
  // The program's own options have a section of their own; every command has --help.
  const options = command.parent === null ? [] : help.visibleOptions(command).filter((option) => option.long !== '--help');
  if (options.length > 0) parts.push(optionTable(command, options));
  if (command.parent !== null && command.commands.length > 0) parts.push(subcommandTable(command));
  const example = after.replace(/^\n+|\s+$/g, '');
  if (example !== '') parts.push(`\`\`\`text\n${example}\n\`\`\`\n`);
  return parts.join('\n');
}

function optionTable(command, options) {
  const help = command.createHelp();
  return table(['option', 'meaning'], options.map((option) => [code(help.optionTerm(option)), text(help.optionDescription(option))]));
}

function subcommandTable(command) {
  const help = command.createHelp();
  const subcommands = help.visibleCommands(command).filter((sub) => command.commands.includes(sub));
  return table(['command', 'what it does'], subcommands.map((sub) => [link(pathOf(sub)), text(help.subcommandDescription(sub))]));
}

/** `<name>` when required, `[name]` when optional, with `...` when it takes several (as in the usage line). */
function argumentTerm(arg) {
  const name = `${arg.name()}${arg.variadic ? '...' : ''}`;
  return arg.required ? `<${name}>` : `[${name}]`;
}

function pathOf(command) {
  const names = [];
  for (let c = command; c.parent !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** A link to a command's section: GitHub's anchor of `### archive verify` is `#archive-verify`. */
function link(path) {
  return `[\`${path}\`](#${path.replace(/ /g, '-')})`;
}

function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return `${[line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')}\n`;
}

const code = (value) => `\`${value.replace(/\|/g, '\\|')}\``;

/** Plain text in Markdown: outside `code spans`, the characters Markdown would read as markup are escaped. */
function text(value) {
  return value
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/[\\<*]/g, '\\$&')))
    .join('')
    .replace(/\|/g, '\\|');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { buildProgram } = await import('../dist/program.js');
  writeFileSync(CLI_DOC, renderCliDoc(readFileSync(CLI_DOC, 'utf8'), buildProgram));
  process.stdout.write('wrote the generated sections of docs/cli.md\n');
}
