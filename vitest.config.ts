import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// No test may touch the developer's real configuration or token.
const home = mkdtempSync(join(tmpdir(), 'svc-migrate-test-home-'));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Most files wait on sockets, child processes and the disk, not the CPU: on two cores vitest's
    // default (one worker) leaves the machine idle half the time.
    maxWorkers: 3,
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
  },
});
