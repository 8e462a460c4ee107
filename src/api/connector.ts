import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';
import { undici } from './undici.js';

/** The first read buffer of a connection, and the most one read may take. */
const FIRST_READ = 64 << 10;
const MAX_READ = 512 << 10;
/** A read smaller than this is copied out, so that its buffer can be read into again. */
const COPY_BELOW = 16 << 10;

/**
 * undici's connector, with larger socket reads on plain-HTTP connections.
 *
 * Node reads a socket 64 KiB at a time, each into a fresh buffer: a 1 GiB download is 16,000 reads,
 * each a trip through undici's parser and our writer. Here a connection reads as much as has
 * arrived, up to 512 KiB: its buffer doubles while reads come back full, and a small read is copied
 * out so that its buffer is read into again. undici keeps views of what it parses (header values,
 * body chunks), so a buffer handed over is never reused. TLS connections keep undici's own reads:
 * Node's TLS layer hands out at most 16 KiB at a time whatever the buffer.
 */
export function createConnector(timeoutMs: number): buildConnector.connector {
  const connectTls = undici.buildConnector({ timeout: timeoutMs });
  return (options, callback) => {
    if (options.protocol !== 'http:') return connectTls(options, callback);
    primeAllocator();
    // highWaterMark: the socket's queue must hold a whole read, or it stops reading after each one.
    const socketOptions = { highWaterMark: MAX_READ, onread: growingReads() };
    return undici.buildConnector({ timeout: timeoutMs, ...socketOptions })(options, callback);
  };
}

/** Read buffers for one connection (net.Socket's `onread`, which calls back with the socket as `this`). */
function growingReads() {
  let size = FIRST_READ;
  let buffer = Buffer.allocUnsafeSlow(size);
  let handedOver = false;
  return {
    buffer(): Buffer {
      if (handedOver) {
        buffer = Buffer.allocUnsafeSlow(size);
        handedOver = false;
      }
      return buffer;
    },
    callback(this: Socket, bytes: number, read: Uint8Array): boolean {
      if (bytes === read.length) size = Math.min(MAX_READ, size * 2);
      if (bytes < COPY_BELOW) return this.push(Buffer.from(read.subarray(0, bytes)));
      handedOver = true;
      return this.push(Buffer.from(read.buffer, read.byteOffset, bytes));
    },
  };
}

let allocatorPrimed = false;

/**
 * glibc's malloc hands freed memory back to the kernel once more than twice its mmap threshold lies
 * free at the top of its heap, and raises that threshold to the size of the largest block freed so
 * far, up to 32 MiB (mallopt(3), "dynamic mmap threshold"). From its start at 128 KiB, the read
 * buffers freed by each collection during a download went back to the kernel and were faulted in
 * again: 40,000–100,000 page faults per GiB, and on this virtual machine rounds with seconds of
 * kernel time. One 16 MiB block, never touched and freed by the next collection, makes glibc keep
 * and reuse that memory (about 12,000 faults per GiB; docs/benchmarks.md). Other allocators only
 * reserve and release 16 MiB of address space.
 */
function primeAllocator(): void {
  if (allocatorPrimed) return;
  allocatorPrimed = true;
  Buffer.allocUnsafeSlow(16 << 20);
}
