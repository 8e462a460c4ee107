import { closeSync, constants, createReadStream, fstatSync, open } from 'node:fs';
import { Socket } from 'node:net';
import { addAbortSignal, type Readable } from 'node:stream';
import { isatty, ReadStream } from 'node:tty';
import { promisify } from 'node:util';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { fromSystemError } from '../../support/system-errors.js';

// What a command reads from stdin or from a file the user named, each read with a bound: a file
// may be /dev/zero, a pipe may never end.

const MiB = 1024 * 1024;

/** The most each kind of input may hold. */
export const INPUT_LIMITS = {
  token: 64 * 1024,
  reposFile: 16 * MiB,
  seed: 16 * MiB,
  idsFile: 16 * MiB,
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
 * A file the user named (a pipe such as `<(…)`, a FIFO, a terminal too), at most `limit` bytes;
 * `role` is its flag, and `why` says why no more is read. Ctrl-C (`signal`) ends the wait for a
 * pipe's writer or a person's typing.
 */
export async function readInputFile(path: string, limit: number, role: string, signal: AbortSignal, why = '', only?: FilesAndPipes): Promise<Buffer> {
  try {
    return await readBounded(await openInput(path, only), limit, () => new UsageError(`${role} ${path} holds more than ${limit} bytes${why}`), signal);
  } catch (error) {
    throw fromSystemError(error, { action: 'read', path, role });
  }
}

/** Kinds of file other than a regular one or a pipe (a terminal, a device) refused with this error. */
type FilesAndPipes = () => Error;

/**
 * A stream of the file at `path`. Opened without blocking: a FIFO's open waits for a writer, and a
 * read of a pipe or a terminal for its data, in a thread that Node waits for at exit, so not even
 * a second Ctrl-C would end the run. Those are read as sockets and terminals are, event by event.
 */
async function openInput(path: string, only?: FilesAndPipes): Promise<Readable> {
  const fd = await promisify(open)(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const info = fstatSync(fd);
    if (info.isFIFO() || info.isSocket()) return new Socket({ fd, readable: true, writable: false });
    if (only && !info.isFile()) throw only();
    if (isatty(fd)) return new ReadStream(fd);
    return createReadStream('', { fd });
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
