import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

// The layering of docs/architecture.md is enforced by eslint.config.js: each case is a line that
// must fail lint in one place (and would pass in the place that owns it).
const eslint = new ESLint({ cwd: new URL('../..', import.meta.url).pathname, overrideConfig: tseslint.configs.disableTypeChecked });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\n`, { filePath: file });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('layering the lint enforces', () => {
  it.each([
    ['src/commands/list.ts', 'import chalk from \'chalk\';\nexport const c = chalk;', /decoration lives in src\/ui/],
    ['src/core/wait.ts', 'import ora from \'ora\';\nexport const o = ora;', /decoration lives in src\/ui/],
    ['src/commands/list.ts', 'import { input } from \'@inquirer/prompts\';\nexport const i = input;', /decoration lives in src\/ui/],
    ['src/core/export.ts', 'export function stop(): void {\n  process.exit(1);\n}', /only src\/main.ts ends the process/],
    ['src/commands/send.ts', 'export const token = process.env.SVC_TOKEN;', /environment is read in src\/settings/],
    ['src/commands/download.ts', 'import { status } from \'./status.js\';\nexport const s = status;', /no command imports another/],
    ['src/commands/webhook/replay.ts', 'import { send } from \'./send.js\';\nexport const s = send;', /no command imports another/],
    ['src/commands/webhook/replay.ts', 'import { list } from \'../list.js\';\nexport const s = list;', /no command imports another/],
    ['src/commands/list.ts', 'import type { Runner } from \'../program.js\';\nexport type R = Runner;', /nothing imports the program/],
    ['src/ui/tables.ts', 'import { list } from \'../commands/list.js\';\nexport const l = list;', /ui\/ imports neither commands/],
    ['src/ui/wait.ts', 'import { waitForMigrations } from \'../core/wait.js\';\nexport const w = waitForMigrations;', /type imports only/],
    ['src/api/client.ts', 'import { runExport } from \'../core/export.js\';\nexport const r = runExport;', /src\/api\/ imports only/],
    ['src/webhook/http-server.ts', 'import { createServer } from \'node:net\';\nexport const s = createServer;', /servers use node:http/],
    ['src/sandbox/http.ts', 'import type { Socket } from \'node:net\';\nexport type S = Socket;', /servers use node:http/],
    // The same rules, whatever way round them is written.
    ['src/commands/list.ts', 'import { env } from \'node:process\';\nexport const token = env.SVC_TOKEN;', /environment is read in src\/settings/],
    ['src/core/export.ts', 'import { exit } from \'process\';\nexport const stop = () => exit(1);', /only src\/main.ts ends the process/],
    ['src/settings/resolve.ts', 'import { exit } from \'node:process\';\nexport const stop = () => exit(1);', /only src\/main.ts ends the process/],
    ['src/core/export.ts', 'export const stop = () => globalThis.process.exit(1);', /only src\/main.ts ends the process/],
    ['src/commands/list.ts', 'export const token = globalThis.process.env.SVC_TOKEN;', /environment is read in src\/settings/],
    ['src/commands/download.ts', 'import { status } from \'../commands/status.js\';\nexport const s = status;', /no command imports another/],
    ['src/commands/webhook/listen.ts', 'import { status } from \'../../commands/status.js\';\nexport const s = status;', /no command imports another/],
    ['src/commands/common/flags.ts', 'import { status } from \'../../commands/status.js\';\nexport const s = status;', /no command imports another/],
    ['src/ui/tables.ts', 'import { ApiClient } from \'../api/client.js\';\nexport const a = ApiClient;', /type imports only from the layers below/],
    ['src/ui/tables.ts', 'import { resolveSettings } from \'../settings/resolve.js\';\nexport const r = resolveSettings;', /type imports only from the layers below/],
    ['src/ui/sandbox.ts', 'import { startSandbox } from \'../sandbox/server.js\';\nexport const s = startSandbox;', /type imports only from the layers below/],
    ['src/commands/webhook/send.ts', 'import type { Context } from \'../../context.js\';\nexport const secret = (context: Context) => context.io.env.SVC_WEBHOOK_SECRET;', /reads context.settings, not the environment/],
    ['src/api/undici.ts', 'import Agent from \'undici/lib/dispatcher/agent.js\';\nexport const a = Agent;', /undici through its public entry only/],
    ['src/ui/archive.ts', 'import { scanArchive } from \'../core/archive/scan.js\';\nexport const s = scanArchive;', /type imports only/],
  ])('%s: %s', async (file, code, rule) => {
    expect((await problems(file, code)).join('\n')).toMatch(rule);
  });

  it.each([
    ['src/ui/tables.ts', 'import chalk from \'chalk\';\nexport const c = chalk;'],
    ['src/main.ts', 'export function stop(): void {\n  process.exit(1);\n}'],
    ['src/settings/resolve.ts', 'export const token = process.env.SVC_TOKEN;'],
    ['src/commands/list.ts', 'import { parsePositiveInt } from \'./common/options.js\';\nexport const p = parsePositiveInt;'],
    ['src/ui/wait.ts', 'import type { WaitEvent } from \'../core/wait.js\';\nexport type W = WaitEvent;'],
    ['src/ui/tables.ts', 'import type { Migration } from \'../api/types.js\';\nexport type M = Migration;'],
    ['src/commands/webhook/listen.ts', 'import { parsePort } from \'../common/options.js\';\nexport const p = parsePort;'],
    ['src/settings/environment.ts', 'import { env } from \'node:process\';\nexport const home = env.HOME;'],
  ])('%s may: %s', async (file, code) => {
    expect(await problems(file, code)).toEqual([]);
  });
});

describe('tests wait on events, not on time', () => {
  it.each([
    ['a sleep', 'export const sleep = () => new Promise((resolve) => setTimeout(resolve, 10));', /no sleeps in tests/],
    ['a sleep through an arrow', 'export const sleep = () => new Promise<void>((resolve) => setTimeout(() => resolve(), 10));', /no sleeps in tests/],
    ['a recursive poll', 'export const poll = (ready: () => boolean, done: () => void): unknown => (ready() ? done() : setTimeout(poll, 10, ready, done));', /no sleeps in tests/],
    ['a timer poll', 'export const poll = setInterval(() => undefined, 20);', /no timer polls in tests/],
    ['vi.waitUntil', 'import { vi } from \'vitest\';\nexport const ready = vi.waitUntil(() => true);', /look again on a timer/],
    ['expect.poll', 'import { expect } from \'vitest\';\nexport const ready = expect.poll(() => 1).toBe(1);', /look again on a timer/],
    ['the machine\'s time', 'export const started = Date.now();', /the machine's time in a test/],
    ['a duration', 'export const started = performance.now();', /the machine's time in a test/],
    ['timers/promises', 'import { setTimeout } from \'node:timers/promises\';\nexport const sleep = () => setTimeout(10);', /no sleeps in tests/],
  ])('%s fails lint in a test', async (_name, code, rule) => {
    expect((await problems('test/e2e/example.test.ts', code)).join('\n')).toMatch(rule);
  });

  it('a ceiling that ends a hang passes', async () => {
    const ceiling = 'import { spawn } from \'node:child_process\';\nconst child = spawn(\'true\');\nexport const timer = setTimeout(() => child.kill(\'SIGKILL\'), 15_000);';
    expect(await problems('test/e2e/example.test.ts', ceiling)).toEqual([]);
  });
});
