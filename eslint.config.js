// One tool for lint and format (ESLint with @stylistic), plus the layering rules of
// docs/architecture.md. Pure JavaScript on purpose: `npm ci` must work from the lock file alone.
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const decoration = ['chalk', 'ora', 'cli-table3', 'string-width', '@inquirer/prompts', '@inquirer/core'].map((name) => ({
  name,
  message: 'terminal decoration lives in src/ui/ only',
}));
const decorationPattern = { group: ['@inquirer/*'], message: 'terminal decoration lives in src/ui/ only' };
const http = { name: 'undici', message: 'HTTP lives in src/api/ only (src/api/undici.ts loads it)' };
/** A library's files beyond its entry move between minor versions: undici by its public entry only. */
const privateUndici = { group: ['undici/*'], message: 'undici through its public entry only (\'undici\'): its private paths change without notice' };
const cli = { name: 'commander', message: 'commander lives in src/program.ts and src/commands/ only' };
/** Servers are node:http's (llhttp reads and frames every request): no server or socket of node:net's own. */
const rawSockets = {
  name: 'node:net',
  importNames: ['createServer', 'Server', 'Socket', 'connect', 'createConnection'],
  message: 'servers use node:http (llhttp), never a socket of their own; IncomingMessage[\'socket\'] is the connection type',
};
const program = {
  group: ['**/program.js', '**/main.js'],
  message: 'nothing imports the program or the entry point: Context and Runner live in src/context.ts',
};
const upward = {
  group: ['**/ui/*', '**/commands/*', '**/commands/**', '**/program.js', '**/main.js', '**/context.js'],
  message: 'core layers never reach up into ui, commands or the program',
};
const processImports = (names, message) => ['process', 'node:process'].map((name) => ({ name, importNames: names, message }));
const restrict = (paths, patterns = [], { allowEnv = false } = {}) => ({
  'no-restricted-imports': [
    'error',
    {
      paths: [
        ...paths,
        ...processImports(['exit'], 'only src/main.ts ends the process: return an exit code or throw a CliError'),
        ...(allowEnv ? [] : processImports(['env'], 'the environment is read in src/settings/ and src/main.ts only')),
      ],
      patterns: [...patterns, privateUndici],
    },
  ],
});
/** `globalThis.process.exit` and `.env`: the property rule sees only `process.…`. */
const throughGlobal = (names) => ({
  selector: `MemberExpression[object.type='MemberExpression'][object.property.name='process'][property.name=/^(${names.join('|')})$/]`,
  message: 'only src/main.ts ends the process, and the environment is read in src/settings/ and src/main.ts only',
});
/** Commands read settings, not the environment (src/settings/resolve.ts resolves what they need). */
const commandEnv = {
  selector: 'MemberExpression[property.name=\'env\'][object.property.name=\'io\']',
  message: 'a command reads context.settings, not the environment: resolve what it needs in src/settings/resolve.ts',
};
/** A command imports no other command, however the path to it is written. */
const otherCommands = { group: ['**/commands/**', '!**/commands/common', '!**/commands/common/**'], message: 'no command imports another: move what they share to src/commands/common/' };

const exit = { object: 'process', property: 'exit', message: 'only src/main.ts ends the process: return an exit code or throw a CliError' };
const env = {
  object: 'process',
  property: 'env',
  message: 'the environment is read in src/settings/ and src/main.ts only; commands read context.settings',
};

/**
 * Tests wait on an event, a file, a port, a process's exit or the injected clock; timeouts are only
 * ceilings that end a hang (docs/architecture.md#testing). On a loaded machine a fixed sleep is too
 * short, a timer poll races what it polls, and the machine's time says nothing about the program.
 * A place that truly needs one says why in an eslint-disable comment.
 */
const waitOnEvents = 'wait on an event (a stream\'s data, fs.watch, a server\'s request, a child\'s exit) or the injected clock';
const timing = [
  {
    selector: 'CallExpression[callee.name="setInterval"], CallExpression[callee.property.name="setInterval"]',
    message: `no timer polls in tests: ${waitOnEvents}`,
  },
  {
    // setTimeout(resolve, 10), setTimeout(poll, 10), and () => resolve() in a promise: a sleep. A
    // ceiling that ends a hang calls something that ends it (kill, abort) and is not flagged.
    selector: [
      'CallExpression[callee.name="setTimeout"][arguments.0.type="Identifier"]',
      'CallExpression[callee.property.name="setTimeout"][arguments.0.type="Identifier"]',
      'NewExpression[callee.name="Promise"] CallExpression[callee.name="setTimeout"] > :function.arguments:first-child[body.type="CallExpression"][body.callee.name=/^(resolve|res|r|done|next|wake|poll|check)$/]',
    ].join(', '),
    message: `no sleeps in tests: ${waitOnEvents}; a timer may only end a hang`,
  },
  {
    selector: 'CallExpression[callee.object.name="vi"][callee.property.name=/^(waitUntil|waitFor)$/], CallExpression[callee.object.name="expect"][callee.property.name="poll"]',
    message: `vi.waitUntil, vi.waitFor and expect.poll look again on a timer: ${waitOnEvents}`,
  },
  {
    selector: 'MemberExpression[object.name="Date"][property.name="now"], MemberExpression[object.name="performance"][property.name="now"], MemberExpression[object.name="process"][property.name="hrtime"], NewExpression[callee.name="Date"][arguments.length=0]',
    message: 'the machine\'s time in a test: use the injected clock (the sandbox\'s, or recordingClock), a fixed instant, or assert on events instead of durations',
  },
];
const timers = ['timers/promises', 'node:timers/promises'].map((name) => ({ name, message: `no sleeps in tests: ${waitOnEvents}` }));

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tmp/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  stylistic.configs.customize({ indent: 2, quotes: 'single', semi: true, arrowParens: true, braceStyle: '1tbs' }),
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: globals.node, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@stylistic/max-len': ['error', { code: 140, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true }],
      '@stylistic/operator-linebreak': 'off',
      '@stylistic/multiline-ternary': 'off',
      '@stylistic/indent-binary-ops': 'off',
      '@stylistic/quote-props': ['error', 'as-needed'],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'error',
      'no-control-regex': 'off',
      // An async function turns a throw into a rejection, which the Runner and the download sinks
      // rely on; one that does not await (yet) is not a mistake here.
      '@typescript-eslint/require-await': 'off',
    },
  },
  // Scripts, benchmarks and the bin shim are plain JavaScript outside the TypeScript project.
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  // The inspector's page script runs in a browser, not in Node.
  { files: ['web/**/*.js'], languageOptions: { globals: globals.browser, sourceType: 'script' } },

  // A file that grows past this does more than one job: split it by job (docs/architecture.md#layers).
  { files: ['src/**/*.ts'], rules: { 'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }] } },

  // The layers (docs/architecture.md#layers). A later block replaces an earlier one's
  // no-restricted-imports for the same file, so each block lists everything its folder may not use.
  {
    files: ['src/**/*.ts'],
    rules: {
      ...restrict([http, ...decoration], [decorationPattern, program]),
      'no-restricted-properties': ['error', exit, env],
      'no-restricted-syntax': ['error', throughGlobal(['exit', 'env'])],
    },
  },
  {
    files: ['src/main.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [http, ...decoration], patterns: [decorationPattern, privateUndici] }],
      'no-restricted-properties': 'off',
      'no-restricted-syntax': 'off',
    },
  },
  {
    files: ['src/core/**', 'src/sandbox/**', 'src/webhook/**'],
    rules: restrict([http, ...decoration, cli, rawSockets], [decorationPattern, upward]),
  },
  {
    files: ['src/settings/**'],
    rules: {
      ...restrict([http, ...decoration, cli], [decorationPattern, upward], { allowEnv: true }),
      'no-restricted-properties': ['error', exit],
      'no-restricted-syntax': ['error', throughGlobal(['exit'])],
    },
  },
  {
    files: ['src/api/**'],
    rules: restrict(
      [...decoration, cli],
      [decorationPattern, { ...upward, group: [...upward.group, '**/core/*'], message: 'src/api/ imports only errors, support/ and its own files' }],
    ),
  },
  {
    // Leaf helpers any layer may use: they must stay leaves, or a layer would reach another through them.
    files: ['src/support/**'],
    rules: restrict([http, ...decoration, cli], [decorationPattern, { regex: '^\\.\\./(?!errors\\.js$)', message: 'src/support/ holds leaf helpers: they import node, each other and errors.ts only' }]),
  },
  {
    // The renderers draw what core returns: they may name its types, never run it or a command.
    files: ['src/ui/**'],
    rules: restrict([http, cli], [
      { group: ['**/commands/*', '**/commands/**', '**/program.js', '**/main.js', '**/context.js'], message: 'src/ui/ imports neither commands nor the program' },
      {
        group: ['**/core/**', '!**/core/archive', '**/core/archive/*', '!**/core/archive/problem.js', '**/api/**', '!**/api/types.js', '**/settings/**', '**/sandbox/**', '**/webhook/**'],
        allowTypeImports: true,
        message: 'src/ui/ renders what it is given: type imports only from the layers below (values from api/types, errors and the archive problem list)',
      },
    ]),
  },
  {
    // A command is flag wiring over core: what two commands share lives in src/commands/common/.
    files: ['src/commands/**'],
    rules: { 'no-restricted-syntax': ['error', throughGlobal(['exit', 'env']), commandEnv] },
  },
  {
    files: ['src/commands/*.ts'],
    rules: restrict([http, ...decoration], [decorationPattern, program, otherCommands, { regex: '^\\./(?!common/)', message: otherCommands.message }]),
  },
  {
    files: ['src/commands/webhook/*.ts', 'src/commands/archive/*.ts'],
    ignores: ['src/commands/webhook/index.ts', 'src/commands/archive/index.ts'],
    // `listen-*.ts` are parts of `listen` (its forwarding, its relay), split off to keep each file short.
    rules: restrict([http, ...decoration], [decorationPattern, program, otherCommands, { regex: '^\\./(?!listen-[a-z]+\\.js$)|^\\.\\./(?!\\.\\./|common/)', message: otherCommands.message }]),
  },
  {
    files: ['src/commands/common/**'],
    rules: restrict([http, ...decoration], [decorationPattern, program, otherCommands, { regex: '^\\.\\./(?!\\.\\./)', message: 'shared helpers sit below the commands' }]),
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...timing],
      'no-restricted-imports': ['error', { paths: timers }],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // Tests read JSON bodies and output (`any` by nature) and assert on their shape.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
);
