import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import type * as Undici from 'undici';

// The runtime tuning of the HTTP path. Each tweak here stays only while three things hold
// (docs/benchmarks.md, "Tuning that stays"): `npm run bench` shows it buys at least 15%, a test
// fails if it silently stops applying on a Node that CI runs, and its paragraph below says why.
// None changes a byte sent or received. Importing this module loads nothing: main.ts calls
// tuneRuntime at start-up, and undici loads when undici.ts is first imported. undici is pinned to
// ~7.30 in package.json because its parts are loaded by their private paths.

// V8's baseline compiler for WebAssembly.

/**
 * undici parses HTTP in WebAssembly, and V8 also optimises that module with TurboFan: on Node 20,
 * `list --json` takes 158 ms and 61 MB with Liftoff only, 242 ms and 96 MB without (Node 22: 132
 * against 189 ms); the 1 GiB download peaks about 20 MB lower. Liftoff parses as fast here, since a
 * body passes through the parser untouched. Call before the first request: the module is compiled
 * at the first connection. Node 24's V8 reads Wasm flags at start-up only, so there this does
 * nothing. Guarded by test/api/transport.test.ts ("V8's baseline compiler only").
 */
export function tuneRuntime(): void {
  setFlagsFromString('--liftoff-only');
}

// undici in parts.

/**
 * The parts of undici svc-migrate uses, loaded on their own. undici's index also loads fetch,
 * WebSocket, EventSource, caching and mocking, which no command here needs: on Node 20, which has no
 * compile cache, `list --json` takes 158 ms this way and 211 ms with the whole package (on Node 22
 * and 24 the cache makes the two level). Should a later undici move these files, the whole package
 * is loaded instead: slower, never broken. Guarded by test/e2e/cli.test.ts (the parts are what a
 * command loads) and test/api/transport.test.ts (the fallback).
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

// Larger socket reads.

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
 * body chunks), so a buffer handed over is read into again only once the download's writer gives it
 * back (`recycleRead`). That keeps memory flat: V8 frees a dropped buffer, which lives outside its
 * heap, only after tens of megabytes of them have piled up (a 1 GiB download peaked at 131 MB with
 * fresh buffers, at 64 MiB the same as 1 GiB). TLS connections keep undici's own reads:
 * Node's TLS layer hands out at most 16 KiB at a time whatever the buffer. The 1 GiB download with
 * `--no-checksum` took 1.09 s this way and 1.45 s with Node's reads (curl: 1.02 s). Guarded by
 * test/api/transport.test.ts ("the plain-HTTP connector"), which sees reads over 64 KiB.
 */
export function createConnector(timeoutMs: number): Undici.buildConnector.connector {
  const { buildConnector } = undiciParts();
  const connectTls = buildConnector({ timeout: timeoutMs });
  return (options, callback) => {
    if (options.protocol !== 'http:') return connectTls(options, callback);
    // highWaterMark: the socket's queue must hold a whole read, or it stops reading after each one.
    const socketOptions = { highWaterMark: MAX_READ, onread: growingReads() };
    return buildConnector({ timeout: timeoutMs, ...socketOptions })(options, callback);
  };
}

/**
 * The reads handed over and not yet given back, by their memory: what `recycleRead` may return to
 * the connection that read them. Weak, so a read nobody gives back is simply collected.
 */
const handedOver = new WeakMap<ArrayBufferLike, { bytes: number; giveBack: () => void }>();

/**
 * Gives a whole read back to its connection, to be read into again. Call only once nothing holds
 * `chunk` or another view of its bytes any more. undici parses a read synchronously and passes the
 * body on as views of it, so a body chunk that is the whole read held no header bytes and nothing
 * of it was put back on the socket: once its consumer is done, no one else can see those bytes.
 * Anything else (part of a read, a copy, a read from another connector) is ignored.
 */
export function recycleRead(chunk: Uint8Array): void {
  const read = handedOver.get(chunk.buffer);
  if (!read || chunk.byteOffset !== 0 || chunk.length !== read.bytes) return;
  handedOver.delete(chunk.buffer);
  read.giveBack();
}

/** Buffers given back and kept for the next reads of a connection, at most. */
const KEPT = 4;

/** Read buffers for one connection (net.Socket's `onread`, which calls back with the socket as `this`). */
function growingReads() {
  let size = FIRST_READ;
  let buffer: Uint8Array = Buffer.allocUnsafeSlow(size);
  let replace = false;
  const given: Uint8Array[] = [];
  return {
    buffer(): Uint8Array {
      if (replace) {
        let next = given.pop();
        // Given back before the reads grew: too small now.
        while (next && next.length !== size) next = given.pop();
        buffer = next ?? Buffer.allocUnsafeSlow(size);
        replace = false;
      }
      return buffer;
    },
    callback(this: Socket, bytes: number, read: Uint8Array): boolean {
      if (bytes === read.length) size = Math.min(MAX_READ, size * 2);
      if (bytes < COPY_BELOW) return this.push(Buffer.from(read.subarray(0, bytes)));
      replace = true;
      const giveBack = () => {
        if (read.length === size && given.length < KEPT) given.push(read);
      };
      handedOver.set(read.buffer, { bytes, giveBack });
      return this.push(Buffer.from(read.buffer, read.byteOffset, bytes));
    },
  };
}
