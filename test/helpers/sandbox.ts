import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildArchive } from '../../src/sandbox/archive.js';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';
import { defaultBody } from '../../src/sandbox/state.js';

const running: Sandbox[] = [];

/** Closes every test sandbox (after each test: test/helpers/cleanup.ts). */
export async function closeTestSandboxes(): Promise<void> {
  await Promise.all(running.splice(0).map((sandbox) => sandbox.close()));
}

/** A sandbox for one test (closed after it) and the environment that points the CLI at it. */
export async function testSandbox(options: SandboxOptions = {}) {
  const sandbox = await startSandbox({ exportSeconds: 0.6, ...options });
  running.push(sandbox);
  const env = { SVC_BASE_URL: sandbox.baseUrl, SVC_TOKEN: sandbox.ownerToken, SVC_ORG: sandbox.org };
  return { sandbox, env };
}

/** The running test sandbox at this base URL, so an in-process run can share its clock. */
export function sandboxAt(baseUrl: string | undefined): Sandbox | undefined {
  return running.find((sandbox) => sandbox.baseUrl === baseUrl);
}

/**
 * The archive the sandbox makes for a migration of `names` (octo-org's repositories), with the
 * start request's `flags`: written to a file of its own, without a download.
 */
export async function sandboxArchive(names: string[], flags: Partial<ReturnType<typeof defaultBody>> = {}): Promise<string> {
  const { sandbox } = await testSandbox();
  const org = sandbox.store.organization('octo-org');
  if (!org) throw new Error('the sandbox seed has no octo-org');
  const repositories = names.map((name) => sandbox.store.repository(org, name)).filter((repo) => repo !== undefined);
  const stored = sandbox.store.start(org, { ...defaultBody(repositories.map((repo) => repo.full_name)), ...flags }, repositories);
  const migration = sandbox.store.view(stored);
  const dir = mkdtempSync(join(tmpdir(), 'svc-sandbox-archive-'));
  await buildArchive(dir, { migration, organization: migration.owner, repositories, padBytes: 0 });
  return join(dir, `${migration.guid}.tar.gz`);
}
