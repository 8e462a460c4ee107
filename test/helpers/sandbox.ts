import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';

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
