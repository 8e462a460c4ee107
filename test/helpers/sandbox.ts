import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildArchive } from '../../src/sandbox/archive.js';
import { Agent, fetch as undiciFetch, type RequestInit } from 'undici';
import type { ExtraTrust } from '../../src/api/trust.js';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';
import { defaultBody } from '../../src/sandbox/state.js';

// Tests reach the sandbox as users reach the service: over HTTPS (`tls`), trusting its authority by
// SVC_CA_FILE. A test that means plain HTTP says `tls: false`.

const running: { sandbox: Sandbox; agent: Agent | undefined }[] = [];

/** Closes every test sandbox (after each test: test/helpers/cleanup.ts). */
export async function closeTestSandboxes(): Promise<void> {
  await Promise.all(running.splice(0).map(async ({ sandbox, agent }) => {
    await agent?.close();
    await sandbox.close();
  }));
}

/** What a client adds to Node's trust to reach `sandbox` (undefined over plain HTTP). */
export function sandboxTrust(sandbox: Sandbox): ExtraTrust | undefined {
  return sandbox.ca && { certificates: [sandbox.ca.certificate] };
}

/**
 * A sandbox for one test (closed after it), over HTTPS unless `tls: false`; the environment that
 * points the CLI at it (SVC_CA_FILE included); and `fetch` for the test's own requests to it, which
 * trusts its authority.
 */
export async function testSandbox(options: SandboxOptions = {}) {
  const sandbox = await startSandbox({ exportSeconds: 0.6, tls: true, ...options });
  const agent = sandbox.ca && new Agent({ connect: { ca: sandbox.ca.certificate } });
  running.push({ sandbox, agent });
  const env: { SVC_BASE_URL: string; SVC_TOKEN: string; SVC_ORG: string; SVC_CA_FILE?: string } = {
    SVC_BASE_URL: sandbox.baseUrl,
    SVC_TOKEN: sandbox.ownerToken,
    SVC_ORG: sandbox.org,
  };
  if (sandbox.ca) env.SVC_CA_FILE = sandbox.ca.file;
  const fetch = (url: string | URL, init: RequestInit = {}) => undiciFetch(url, { ...init, ...(agent ? { dispatcher: agent } : {}) });
  return { sandbox, env, fetch };
}

/** The running test sandbox at this base URL, so an in-process run can share its clock. */
export function sandboxAt(baseUrl: string | undefined): Sandbox | undefined {
  return running.find(({ sandbox }) => sandbox.baseUrl === baseUrl)?.sandbox;
}

/**
 * The archive the sandbox makes for a migration of `names` (octo-org's repositories), with the
 * start request's `flags`: written to a file of its own, without a download. `options` start the
 * sandbox (`repositories: 50` adds `repo-0001` … `repo-0050`).
 */
export async function sandboxArchive(
  names: string[],
  flags: Partial<ReturnType<typeof defaultBody>> = {},
  options: SandboxOptions = {},
): Promise<string> {
  const { sandbox } = await testSandbox(options);
  const org = sandbox.store.organization('octo-org');
  if (!org) throw new Error('the sandbox seed has no octo-org');
  const repositories = names.map((name) => sandbox.store.repository(org, name)).filter((repo) => repo !== undefined);
  const stored = sandbox.store.start(org, { ...defaultBody(repositories.map((repo) => repo.full_name)), ...flags }, repositories);
  const migration = sandbox.store.view(stored);
  const dir = mkdtempSync(join(tmpdir(), 'svc-sandbox-archive-'));
  await buildArchive(dir, {
    migration,
    organization: migration.owner,
    repositories,
    seedOrganization: org,
    users: sandbox.store.seed.users,
    extrasOf: (repo) => sandbox.store.seedRepository(org, repo),
    padBytes: 0,
  });
  return join(dir, `${migration.guid}.tar.gz`);
}
