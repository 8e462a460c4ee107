import { createReadStream } from 'node:fs';
import { addAbortSignal, type Readable } from 'node:stream';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { fromSystemError } from '../../system-errors.js';

// What a command reads from stdin or from a file the user named, each read with a bound: a file
// may be /dev/zero, a pipe may never end.

const MiB = 1024 * 1024;

/** The most each kind of input may hold. */
export const INPUT_LIMITS = {
  token: 64 * 1024,
  reposFile: 16 * MiB,
  seed: 16 * MiB,
} as const;

/**
 * A stream to its end, at most `limit` bytes; beyond, `tooLarge` is thrown and the stream left. At
 * Ctrl-C (`signal`), the signal's reason is thrown: a pipe that never ends or a person who never
 * presses Ctrl-D does not hold the run.
 */
async function readBounded(stream: Readable, limit: number, tooLarge: () => Error, signal?: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (signal) addAbortSignal(signal, stream);
  try {
    for await (const chunk of stream) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
      size += bytes.length;
      if (size > limit) {
        stream.destroy();
        throw tooLarge();
      }
      chunks.push(bytes);
    }
  } catch (error) {
    signal?.throwIfAborted();
    throw error;
  }
  return Buffer.concat(chunks, size);
}

/** Everything on stdin, at most `limit` bytes (`what` names what it should hold). */
export async function readStdin(context: Context, limit: number, what: string): Promise<Buffer> {
  try {
    return await readBounded(context.io.stdin, limit, () => new UsageError(`stdin holds more than ${limit} bytes, more than ${what} can be`), context.signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EISDIR') throw error;
    throw new UsageError(`stdin is a directory, not ${what}`, { hint: 'redirect a file (… < file) or pipe one in' });
  }
}

/**
 * A file the user named (a pipe such as `<(…)` too), at most `limit` bytes; `role` is its flag, and
 * `why` says why no more is read.
 */
export async function readInputFile(path: string, limit: number, role: string, why = ''): Promise<Buffer> {
  try {
    return await readBounded(createReadStream(path), limit, () => new UsageError(`${role} ${path} holds more than ${limit} bytes${why}`));
  } catch (error) {
    throw fromSystemError(error, { action: 'read', path, role });
  }
}
