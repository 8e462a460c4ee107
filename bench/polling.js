// Benchmark 5: requests made by `status --wait` over a 10-minute export, on the sandbox
// clock (every sleep moves it forward), so the ten minutes pass at once.
import { ApiClient } from '../dist/api/client.js';
import { startMigration } from '../dist/api/migrations.js';
import { waitForMigrations } from '../dist/core/wait.js';
import { startSandbox } from '../dist/sandbox/server.js';

export async function pollingBench() {
  const sandbox = await startSandbox({ exportSeconds: 600 });
  const clock = { now: () => sandbox.clock.now(), sleep: async (ms) => sandbox.clock.advance(ms) };
  let refused = 0;
  const client = new ApiClient({
    baseUrl: sandbox.baseUrl,
    token: sandbox.ownerToken,
    userAgent: 'bench',
    clock,
    hooks: { onRateLimitWait: () => refused++ },
  });
  try {
    const { id } = await startMigration(client, 'octo-org', { repositories: ['octo-org/widgets'] });
    await waitForMigrations(client, { org: 'octo-org', ids: [id], clock });
    const polls = sandbox.requests.filter((r) => r.method === 'GET' && r.url.startsWith(`/orgs/octo-org/migrations/${id}`));
    const notModified = polls.filter((r) => r.status === 304).length;
    // A fixed 10 s poll, as other tools do, would make 60 requests over the same ten minutes.
    return [
      { name: `status --wait over a 10-minute export: requests (${notModified} were free 304s; ${refused} refused)`, ours: polls.length, baseline: 60, baselineName: 'a fixed 10 s poll', target: 1.0, unit: 'requests' },
    ];
  } finally {
    await client.close();
    await sandbox.close();
  }
}
