import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * V8 settings for a short-lived command-line process (measured in docs/benchmarks.md).
 *
 * undici parses HTTP in WebAssembly. By default V8 also optimises that module with TurboFan, which
 * costs about 35 MB of memory and 80 ms for a process that makes a handful of requests; the baseline
 * compiler alone parses as fast here, since a download's body passes through the parser untouched.
 * Call before the first request: the module is compiled at the first connection.
 */
export function tuneRuntime(): void {
  setFlagsFromString('--liftoff-only');
}

let collect: ((options: { type: 'minor' }) => void) | undefined;

/**
 * Returns a function that runs a young-generation collection after every `bytes` it is told of.
 *
 * Every socket read allocates a fresh buffer, and V8 frees them only when a collection runs: while a
 * download runs at full speed, tens of MB of chunks already written wait for it. A collection of the
 * young generation every few MiB costs well under a millisecond and keeps peak memory flat and low.
 */
export function collectorEvery(bytes: number): (received: number) => void {
  if (!collect) {
    // The usual way to reach V8's gc() in a process not started with --expose-gc.
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as typeof collect;
  }
  let since = 0;
  return (received) => {
    since += received;
    if (since < bytes) return;
    since = 0;
    collect?.({ type: 'minor' });
  };
}
