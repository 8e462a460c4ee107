import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// No test may touch the developer's real configuration or token.
const home = mkdtempSync(join(tmpdir(), 'svc-migrate-test-home-'));

/** The tests that start no process and no browser: four folders, and files of the others that run all in-process. */
const QUICK = [
  'test/unit/**/*.test.ts',
  'test/core/**/*.test.ts',
  'test/commands/**/*.test.ts',
  'test/api/**/*.test.ts',
  'test/e2e/auth-config.test.ts',
  'test/e2e/sandbox.test.ts',
  'test/e2e/sandbox-fidelity.test.ts',
  'test/e2e/webhook-urls.test.ts',
  'test/e2e/webhooks.test.ts',
  'test/reliability/receiver-http.test.ts',
  'test/sandbox/conformance.test.ts',
  'test/sandbox/padded-archive.test.ts',
  'test/sandbox/payload-schemas.test.ts',
];

const shared = {
  testTimeout: 20_000,
  hookTimeout: 20_000,
  env: {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    SVC_CONFIG_DIR: join(home, 'svc-migrate'),
    SVC_TOKEN: '',
    SVC_ORG: '',
    SVC_BASE_URL: '',
    SVC_SANDBOX: '',
    HTTP_PROXY: '',
    HTTPS_PROXY: '',
    http_proxy: '',
    https_proxy: '',
    NO_COLOR: '1',
  },
};

export default defineConfig({
  test: {
    // Most files wait on sockets, child processes and the disk, not the CPU: on two cores vitest's
    // default (one worker) leaves the machine idle half the time.
    maxWorkers: 3,
    projects: [
      // What starts no process and no browser (test/helpers/no-process.ts refuses them): `npm run
      // test:quick`. One module graph per worker instead of a fresh fork and imports for each file.
      {
        test: {
          ...shared,
          name: 'quick',
          include: QUICK,
          isolate: false,
          setupFiles: ['test/helpers/no-process.ts', 'test/helpers/cleanup.ts'],
        },
      },
      // The rest: the built binary, git, tar, bsdtar, Chromium, pseudo-terminals. It shares modules
      // too; what a test starts (sandboxes, listeners) ends after it (test/helpers/cleanup.ts), and
      // each file's own servers and children in its own hooks.
      {
        test: {
          ...shared,
          name: 'behaviour',
          include: ['test/**/*.test.ts'],
          exclude: QUICK,
          isolate: false,
          setupFiles: ['test/helpers/cleanup.ts'],
        },
      },
    ],
  },
});
