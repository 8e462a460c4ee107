import { Argument, type Command } from 'commander';
import type { Runner } from '../context.js';
import { type CommandNode, completionScript, type Shell, SHELLS } from '../ui/completion.js';
import { suggested } from './common/completion-values.js';
import { examples } from './common/options.js';

/** The program's commands, options and fixed values, for the completion scripts (ui/completion.ts). */
function collect(command: Command, path: string[] = [], inherited: CommandNode['options'] = []): CommandNode[] {
  const own = command.options.filter((option) => !option.hidden).map((option) => ({
    flags: [option.short, option.long].filter((flag): flag is string => Boolean(flag)),
    description: option.description,
    values: option.argChoices ?? [...(suggested(option)?.values() ?? [])],
    list: suggested(option)?.list ?? false,
    takesValue: option.required || option.optional,
    files: /<(file|dir)/.test(option.flags),
  }));
  const help = { flags: ['-h', '--help'], description: 'show help', values: [], list: false, takesValue: false, files: false };
  const options = [...own, ...inherited, help];
  const children = command.commands.filter((child) => child.name() !== 'help');
  const [first] = command.registeredArguments;
  const node: CommandNode = {
    path: path.join(' '),
    description: command.description(),
    subcommands: children.map((child) => child.name()),
    options,
    argumentValues: first ? (first.argChoices ?? [...(suggested(first)?.values() ?? [])]) : [],
    argumentFiles: command.registeredArguments.some((argument) => /file|dir/.test(argument.name())),
  };
  // Global options of the program apply to every subcommand.
  const passDown = path.length === 0 ? own : inherited;
  return [node, ...children.flatMap((child) => collect(child, [...path, child.name()], passDown))];
}

export function register(program: Command, run: Runner): void {
  program
    .command('completion')
    .description('print the shell completion script (bash, zsh or fish)')
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .addHelpText(
      'after',
      examples([
        // Each line works on a fresh account, where none of these directories exists yet.
        'mkdir -p ~/.local/share/bash-completion/completions && svc-migrate completion bash > ~/.local/share/bash-completion/completions/svc-migrate',
        'mkdir -p ~/.zfunc && svc-migrate completion zsh > ~/.zfunc/_svc-migrate   # then fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc',
        'mkdir -p ~/.config/fish/completions && svc-migrate completion fish > ~/.config/fish/completions/svc-migrate.fish',
      ]),
    )
    .action((shell: Shell, _options: unknown, command: Command) =>
      run(command, () => ({ shell }), async (context) => {
        context.out.result(completionScript(collect(program), shell), (script) => script.trimEnd());
      }),
    );
}
