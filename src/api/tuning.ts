import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import type * as Undici from 'undici';

// The runtime tuning of the HTTP path, downloads above all: each tweak here trades plain code for
// measured start-up, speed or memory, and none changes a byte sent or received. The measurements,
// and what was tried and dropped, are in docs/benchmarks.md; rerun `npm run bench` before changing
// a value. Importing this module loads nothing: main.ts calls tuneRuntime at start-up, and undici
// loads when undici.ts is first imported. Sizes that are part of a component's own design stay
// beside it with their reason: how often a download flushes to disk (core/download-sinks.ts), how
// far the hashing worker may lag (core/hasher.ts), the archive check's read sizes (core/archive/scan.ts).

// V8's compilers (docs/benchmarks.md, "Start-up" and "Memory").

/**
 * undici parses HTTP in WebAssembly. By default V8 also optimises that module with TurboFan, which
 * costs about 35 MB of memory and 80 ms for a process that makes a handful of requests; the baseline
 * compiler alone parses as fast here, since a download's body passes through the parser untouched.
 * Call before the first request: the module is compiled at the first connection.
 */
export function tuneRuntime(): void {
  setFlagsFromString('--liftoff-only');
}

// undici in parts (docs/benchmarks.md, "Start-up").

/**
 * The parts of undici svc-migrate uses, loaded on their own. undici's index also loads fetch,
 * WebSocket, EventSource, caching and mocking, which no command here needs: 90–100 ms of start-up
 * for every command that talks HTTP, where these parts take 35–40 ms. Should a later undici move
 * these files, the whole package is loaded instead: slower, never broken.
 */
export interface UndiciParts {
  Agent: typeof Undici.Agent;
  buildConnector: typeof Undici.buildConnector;
  /** Only loaded when a proxy is configured. */
  loadEnvHttpProxyAgent(): typeof Undici.EnvHttpProxyAgent;
}

type Require = (id: string) => unknown;

export function loadUndiciParts(load: Require): UndiciParts {
  try {
    // What undici's index does besides loading everything: request, stream, connect… become methods
    // of every dispatcher (its proxy agent relies on `connect`).
    const Dispatcher = load('undici/lib/dispatcher/dispatcher.js') as typeof Undici.Dispatcher;
    Object.assign(Dispatcher.prototype, load('undici/lib/api/index.js'));
    return {
      Agent: load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent,
      buildConnector: load('undici/lib/core/connect.js') as typeof Undici.buildConnector,
      loadEnvHttpProxyAgent: () => load('undici/lib/dispatcher/env-http-proxy-agent.js') as typeof Undici.EnvHttpProxyAgent,
    };
  } catch {
    const whole = load('undici') as typeof Undici;
    return { Agent: whole.Agent, buildConnector: whole.buildConnector, loadEnvHttpProxyAgent: () => whole.EnvHttpProxyAgent };
  }
}

let parts: UndiciParts | undefined;

/** undici's parts, loaded once (undici.ts asks for them as it is imported). */
export function undiciParts(): UndiciParts {
  return (parts ??= loadUndiciParts(createRequire(import.meta.url)));
}

// Larger socket reads (docs/benchmarks.md, "Download, larger reads" and "Download, 512 KiB reads").

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
export function createConnector(timeoutMs: number): Undici.buildConnector.connector {
  const { buildConnector } = undiciParts();
  const connectTls = buildConnector({ timeout: timeoutMs });
  return (options, callback) => {
    if (options.protocol !== 'http:') return connectTls(options, callback);
    primeAllocator();
    // highWaterMark: the socket's queue must hold a whole read, or it stops reading after each one.
    const socketOptions = { highWaterMark: MAX_READ, onread: growingReads() };
    return buildConnector({ timeout: timeoutMs, ...socketOptions })(options, callback);
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
 * and reuse that memory (about 12,000 faults per GiB). Other allocators only reserve and release
 * 16 MiB of address space.
 */
function primeAllocator(): void {
  if (allocatorPrimed) return;
  allocatorPrimed = true;
  Buffer.allocUnsafeSlow(16 << 20);
}
