/**
 * Keeps this thread busy for `ms` without letting the event loop turn, as a loaded machine or a
 * long synchronous task does to a server in the process. A condition a test sets up, not a wait
 * for anything: nothing the test awaits happens during it.
 */
export function busyFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
