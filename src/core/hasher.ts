import { Worker } from 'node:worker_threads';
import { PACKAGE_ROOT } from '../support/package-root.js';
import type { HashReply, HashRequest } from './hash-worker.js';

/**
 * A sha256 computed off the main thread, so hashing a large archive overlaps its transfer instead
 * of following it: the 1 GiB download with its sha256 took 1.74 s this way and 2.21 s with the same
 * reads and hashing on the main thread (docs/benchmarks.md, "Tuning that stays"). Guarded by
 * test/unit/hasher.test.ts, which sees the main thread free while a file is hashed.
 *
 * For a file, the worker reads back what the main thread reports as written (`advance`), from the
 * page cache: no bytes are copied between threads and the hash covers exactly what is on disk. For a
 * stream (`-o -`), `update` hands batches over, with at most 8 MiB in flight.
 */
export interface BackgroundHash {
  /** Hash the file at `path` as it grows (call once, before `advance`). */
  follow(path: string): void;
  /** The followed file now holds `offset` bytes: hash up to there (told to the worker about every MiB). */
  advance(offset: number): void;
  /** Adds bytes of a stream (copied, so the caller may reuse its buffer); resolves when there is room. */
  update(chunk: Buffer): Promise<void>;
  /** Starts over from byte 0; resolves once earlier work is done, so the file may then be truncated. */
  reset(): Promise<void>;
  /** The hex digest of everything hashed since the last reset; ends the worker. */
  digest(): Promise<string>;
  /** Ends the worker without a digest. */
  close(): Promise<void>;
}

/**
 * The worker's module (core/hash-worker.ts), bundled on its own by `npm run build` as
 * dist/cli-hash-worker.js: the one path that holds whether this module runs bundled, from tsc's
 * output or from src/ in the tests (which run after a build).
 */
const WORKER = new URL('dist/cli-hash-worker.js', PACKAGE_ROOT);

/** Bytes handed to the worker and not yet hashed, at most: beyond, the writer waits, so memory stays bounded. */
const IN_FLIGHT_LIMIT = 8 << 20;
/** Telling the worker about every 64 KiB chunk costs more than the hashing it saves; it learns of each MiB. */
const ADVANCE_STEP = 1 << 20;

export function startBackgroundHash(): BackgroundHash {
  const worker = new Worker(WORKER);
  const send = (message: HashRequest, transfer?: ArrayBuffer[]) => worker.postMessage(message, transfer);
  let inFlight = 0;
  let advanced = 0;
  let told = 0;
  const tell = () => {
    if (told === advanced) return;
    told = advanced;
    send({ type: 'advance', offset: advanced });
  };
  let room: (() => void) | undefined;
  let result: { resolve: (hex: string) => void; reject: (error: Error) => void } | undefined;
  let resetDone: (() => void) | undefined;
  let failure: Error | undefined;
  const fail = (error: Error) => {
    failure ??= error;
    result?.reject(error);
    room?.();
    resetDone?.();
  };

  worker.on('message', (reply: HashReply) => {
    if (reply.type === 'ack') {
      inFlight -= reply.bytes;
      if (inFlight <= IN_FLIGHT_LIMIT / 2) {
        room?.();
        room = undefined;
      }
    } else if (reply.type === 'reset-done') {
      resetDone?.();
      resetDone = undefined;
    } else if (reply.type === 'digest') result?.resolve(reply.hex);
    else fail(new Error(`hashing failed: ${reply.message}`));
  });
  worker.on('error', fail);

  return {
    follow(path) {
      send({ type: 'follow', path });
    },
    advance(offset) {
      advanced = offset;
      if (advanced - told >= ADVANCE_STEP) tell();
    },
    async update(chunk) {
      if (failure) throw failure;
      if (chunk.length === 0) return;
      // A fresh copy, transferred (not copied again) to the worker.
      const bytes = new Uint8Array(chunk);
      inFlight += bytes.length;
      send({ type: 'update', bytes }, [bytes.buffer]);
      if (inFlight > IN_FLIGHT_LIMIT) {
        await new Promise<void>((resolve) => {
          room = resolve;
        });
      }
    },
    async reset() {
      if (failure) throw failure;
      await new Promise<void>((resolve) => {
        resetDone = resolve;
        advanced = told = 0;
        send({ type: 'reset' });
      });
    },
    async digest() {
      try {
        if (failure) throw failure;
        return await new Promise<string>((resolve, reject) => {
          result = { resolve, reject };
          tell();
          send({ type: 'digest' });
        });
      } finally {
        await worker.terminate();
      }
    },
    async close() {
      await worker.terminate();
    },
  };
}
