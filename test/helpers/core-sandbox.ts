import type { ApiClient, ClientOptions } from '../../src/api/client.js';
import type { Clock } from '../../src/support/clock.js';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { SandboxClock } from '../../src/sandbox/state.js';
import { client } from './api-client.js';
import { sandboxTrust, testSandbox } from './sandbox.js';

// The use-cases of src/core called directly against an in-process sandbox, on a clock that moves
// only when the program waits: every reading is exact whatever the machine's load, and an hour of
// polling costs the test what its requests cost.

/** A sandbox clock that stands still between the program's waits; each wait moves it by exactly its length. */
export class VirtualClock extends SandboxClock {
  // A fixed instant: nothing the program does depends on the machine's time.
  private at = Date.parse('2026-06-01T00:00:00Z');
  /** Every wait the program made, in order, as asked. */
  readonly sleeps: number[] = [];
  private held: Promise<void> | undefined;
  /** The clock the program is given (`Clock`): its waits are recorded and move this clock. */
  readonly program: Clock = {
    now: () => this.now(),
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      this.sleeps.push(ms);
      while (this.held) await abortable(this.held, signal);
      this.advance(ms);
      // A turn of the event loop, as a real wait gives: answers and aborts under way land first.
      await new Promise((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
    },
  };

  /**
   * Stops time until the function returned is called: every wait the program begins meanwhile waits
   * (Ctrl-C still ends it), so what takes real time (a start, a write to disk) is done before the
   * clock moves on.
   */
  hold(): () => void {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = () => {
        if (this.held === held) this.held = undefined;
        resolve();
      };
    });
    this.held = held;
    return release;
  }

  override now(): number {
    return this.at;
  }

  override advance(ms: number): void {
    this.at += ms;
  }
}

/**
 * A test sandbox on a virtual clock (closed after the test, test/helpers/cleanup.ts), and an API
 * client to it as its owner on the same clock; `connect` makes another (one that Ctrl-C, its
 * `signal`, stops, as the program's is).
 */
export async function coreSandbox(options: SandboxOptions = {}): Promise<{
  sandbox: Awaited<ReturnType<typeof testSandbox>>['sandbox'];
  api: ApiClient;
  connect(options?: Partial<ClientOptions>): ApiClient;
  clock: VirtualClock;
  org: string;
}> {
  const clock = new VirtualClock();
  const { sandbox } = await testSandbox({ ...options, clock });
  const connect = (extra: Partial<ClientOptions> = {}) =>
    client(sandbox.baseUrl, { token: sandbox.ownerToken, clock: clock.program, trust: sandboxTrust(sandbox), ...extra });
  return { sandbox, api: connect(), connect, clock, org: sandbox.org };
}

/** `promise`, or the signal's reason once it aborts. */
function abortable(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, reject);
  });
}
