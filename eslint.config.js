// One tool for lint and format (ESLint with @stylistic), plus the layering rules of
// docs/architecture.md. Pure JavaScript on purpose: `npm ci` must work from the lock file alone.
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const decoration = ['chalk', 'ora', 'cli-table3', '@inquirer/prompts'].map((name) => ({
  name,
  message: 'terminal decoration lives in src/ui/ only',
}));
const http = { name: 'undici', message: 'HTTP lives in src/api/ only (src/api/undici.ts loads it)' };
const cli = { name: 'commander', message: 'commander lives in src/program.ts and src/commands/ only' };
const upward = {
  group: ['**/ui/*', '**/commands/*', '**/program.js', '**/main.js', '**/context.js'],
  message: 'core layers never reach up into ui, commands or the program',
};
const restrict = (paths, patterns = []) => ({ 'no-restricted-imports': ['error', { paths, patterns }] });

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tmp/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  stylistic.configs.customize({ indent: 2, quotes: 'single', semi: true, arrowParens: true, braceStyle: '1tbs' }),
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: globals.node },
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
    },
  },
  { files: ['src/**/*.ts'], rules: restrict([http]) },
  { files: ['src/core/**', 'src/settings/**', 'src/sandbox/**', 'src/webhook/**'], rules: restrict([http, ...decoration, cli], [upward]) },
  {
    files: ['src/api/**'],
    rules: restrict([...decoration, cli], [{ ...upward, group: [...upward.group, '**/core/*'], message: 'src/api/ imports only errors, clock and its own files' }]),
  },
  { files: ['test/**', 'bench/**'], rules: { '@typescript-eslint/no-non-null-assertion': 'off', '@typescript-eslint/no-explicit-any': 'off' } },
);
