import { describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { getMigration, startMigration, unlockRepository } from '../../src/api/migrations.js';
import { ExitCode, InterruptedError } from '../../src/errors.js';
import { client, failure, freePort, recordingClock, server } from '../helpers/api-client.js';
import { empty, hangUp, json } from '../helpers/scripted-server.js';

// Every retry of the request loop has an end, and a client that was closed is never retried: a
// request on it fails at once, sends nothing, and is not an UnavailableError (which waits take for
// passing trouble and try again).

const migration = { id: 7, state: 'exporting', repositories: [] };

describe('a closed client', () => {
  it('sends nothing and retries nothing: the request fails at once with exit 1, not as passing trouble', async () => {
    const api = await server(json(200, migration));
    const clock = recordingClock();
    const retries: unknown[] = [];
    const closed = client(api.url, { clock, hooks: { onRetry: (retry) => retries.push(retry) } });
    await closed.close();
    const error = await failure(getMigration(closed, 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Unexpected);
    expect(error.message).toMatch(/GET .*\/orgs\/acme\/migrations\/7.* was not sent: the connections of this run are closed/);
    expect(api.requests).toEqual([]);
    expect(retries).toEqual([]);
    expect(clock.sleeps).toEqual([]);
  });

  it('treats undici\'s destroyed connections (UND_ERR_DESTROYED) as closed, not as a cut to retry', async () => {
    const api = await server(json(200, migration));
    const clock = recordingClock();
    const retries: unknown[] = [];
    const dispatcher = new Agent();
    const destroyed = client(api.url, { clock, dispatcher, hooks: { onRetry: (retry) => retries.push(retry) } });
    await dispatcher.destroy();
    const error = await failure(unlockRepository(destroyed, 'acme', 7, 'widgets'));
    expect(error.exitCode).toBe(ExitCode.Unexpected);
    expect(error.message).toMatch(/was not sent/);
    expect(retries).toEqual([]);
    expect(clock.sleeps).toEqual([]);
    expect(api.requests).toEqual([]);
  });

  it('a scoped client ends with its own signal and leaves its parent working; closing the parent closes it', async () => {
    const api = await server(json(200, migration));
    const parent = client(api.url);
    const stop = new AbortController();
    const scoped = parent.scoped(stop.signal);
    expect((await getMigration(scoped, 'acme', 7)).data.id).toBe(7);
    stop.abort();
    await expect(getMigration(scoped, 'acme', 7)).rejects.toBeInstanceOf(InterruptedError);
    expect((await getMigration(parent, 'acme', 7)).data.id).toBe(7);
    await scoped.close();
    expect((await getMigration(parent, 'acme', 7)).data.id).toBe(7);
    await parent.close();
    const other = parent.scoped(new AbortController().signal);
    expect((await failure(getMigration(other, 'acme', 7))).message).toMatch(/was not sent/);
    expect(api.requests).toHaveLength(3);
  });
});

describe('every retry of a request has an end', () => {
  it('a connection dropped every time: 5 tries, then exit 8', async () => {
    const api = await server(hangUp);
    const clock = recordingClock();
    const error = await failure(getMigration(client(api.url, { clock }), 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(api.requests).toHaveLength(5);
    expect(clock.sleeps).toHaveLength(4);
  });

  it('a connection refused before anything answered: one quick retry, then "nothing listens"; the run\'s next request fails at once', async () => {
    const port = await freePort();
    const clock = recordingClock();
    const api = client(`http://127.0.0.1:${port}`, { clock, random: () => 0.999 });
    const error = await failure(getMigration(api, 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(new RegExp(`^nothing listens at 127\\.0\\.0\\.1:${port}: GET .* was refused \\(ECONNREFUSED, 2 tries\\)$`));
    expect(error.hint).toMatch(/--base-url/);
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeLessThanOrEqual(500);
    // The start after a pre-check, say: no second round of tries.
    const start = await failure(startMigration(api, 'acme', { repositories: ['acme/widgets'] }));
    expect(start.message).toMatch(new RegExp(`^nothing listens at 127\\.0\\.0\\.1:${port}: POST .* was refused \\(ECONNREFUSED\\)$`));
    expect(clock.sleeps).toHaveLength(1);
  });

  it('a connection refused after the service answered is passing trouble (a restart): 5 tries', async () => {
    const service = await server(json(200, migration));
    const clock = recordingClock();
    const api = client(service.url, { clock });
    await getMigration(api, 'acme', 7);
    await service.close();
    const error = await failure(getMigration(api, 'acme', 7));
    expect(error.message).not.toMatch(/nothing listens/);
    expect(clock.sleeps).toHaveLength(4);
  });

  it('a service that always answers 503: 5 tries, then exit 8', async () => {
    const api = await server(empty(503));
    const error = await failure(getMigration(client(api.url), 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(api.requests).toHaveLength(5);
  });

  it('a rate limit that never lifts: 4 waits, then exit 8 saying so', async () => {
    const api = await server(json(429, { message: 'slow down' }, { 'retry-after': '1' }));
    const clock = recordingClock();
    const error = await failure(getMigration(client(api.url, { clock }), 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(/still rate limited after 4 waits/);
    expect(api.requests).toHaveLength(5);
    expect(clock.sleeps).toEqual([1000, 1000, 1000, 1000]);
  });
});
