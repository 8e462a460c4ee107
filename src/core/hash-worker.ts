import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

// The thread of core/hasher.ts (which says why a thread): it hashes a file as the main thread
// reports it written, or the bytes of a stream handed over. `npm run build` makes it
// dist/cli-hash-worker.js (scripts/bundle.js), the file the hasher starts.

/** What the hasher asks of this thread. */
export type HashRequest =
  | { type: 'follow'; path: string }
  | { type: 'advance'; offset: number }
  | { type: 'update'; bytes: Uint8Array }
  | { type: 'reset' }
  | { type: 'digest' };

/** What this thread answers. */
export type HashReply =
  | { type: 'ack'; bytes: number }
  | { type: 'reset-done' }
  | { type: 'digest'; hex: string }
  | { type: 'error'; message: string };

const port = parentPort;
if (port) {
  let hash = createHash('sha256');
  let fd: number | undefined;
  let position = 0;
  const buffer = Buffer.allocUnsafe(1 << 20);
  const reply = (message: HashReply) => port.postMessage(message);

  port.on('message', (message: HashRequest) => {
    try {
      if (message.type === 'follow') {
        fd = openSync(message.path, 'r');
      } else if (message.type === 'advance') {
        if (fd === undefined) throw new Error('no file to follow');
        while (position < message.offset) {
          const read = readSync(fd, buffer, 0, Math.min(buffer.length, message.offset - position), position);
          if (read === 0) throw new Error('the file is shorter than what was written');
          hash.update(buffer.subarray(0, read));
          position += read;
        }
      } else if (message.type === 'update') {
        hash.update(message.bytes);
        reply({ type: 'ack', bytes: message.bytes.byteLength });
      } else if (message.type === 'reset') {
        hash = createHash('sha256');
        position = 0;
        reply({ type: 'reset-done' });
      } else {
        if (fd !== undefined) closeSync(fd);
        reply({ type: 'digest', hex: hash.digest('hex') });
      }
    } catch (error) {
      reply({ type: 'error', message: (error as Error).message });
    }
  });
}
