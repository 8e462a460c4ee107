import { createServer } from 'node:net';
import { ApiClient, type ClientOptions } from '../../src/api/client.js';
import type { Clock } from '../../src/support/clock.js';
import { CliError } from '../../src/errors.js';
import { type ScriptedServer, startScriptedServer, startScriptedTlsServer } from './scripted-server.js';

// The API client against scripted servers on loopback: the servers and clients a test makes are
// closed after it (test/helpers/cleanup.ts).

export const TOKEN = 'ghp_testtoken0123456789';

const servers: ScriptedServer[] = [];
const clients: ApiClient[] = [];

export async function closeApiClients(): Promise<void> {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
}

export async function server(...handlers: Parameters<typeof startScriptedServer>): Promise<ScriptedServer> {
  const started = await startScriptedServer(...handlers);
  servers.push(started);
  return started;
}

/** The same over HTTPS (test/helpers/tls.ts makes the certificate). */
export async function tlsServer(...args: Parameters<typeof startScriptedTlsServer>): Promise<ScriptedServer> {
  const started = await startScriptedTlsServer(...args);
  servers.push(started);
  return started;
}

/**
 * A clock whose sleeps return at once, are recorded and move its time forward, so backoff and waits
 * cost no test time; it starts at `start`, not at the machine's time.
 */
export function recordingClock(start = Date.UTC(2026, 0, 1, 12)): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  let now = start;
  return {
    sleeps,
    now: () => now,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason as Error;
      sleeps.push(ms);
      now += ms;
    },
  };
}

export function client(baseUrl: string, options: Partial<ClientOptions> = {}): ApiClient {
  const created = new ApiClient({ baseUrl, token: TOKEN, userAgent: 'svc-migrate/9.9.9', clock: recordingClock(), ...options });
  clients.push(created);
  return created;
}

/** The CliError a promise rejects with (anything else fails the test). */
export async function failure(promise: Promise<unknown>): Promise<CliError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CliError) return error;
    throw error;
  }
  throw new Error('expected a CliError');
}

/** A port nothing listens on: taken from the system, then given back. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
