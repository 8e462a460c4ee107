import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BuiltArchive } from './archive.js';
import type { Faults } from './faults.js';
import type { SandboxClock } from './state.js';

/**
 * The object storage the archive redirect points at (docs/service.md#download-archive): a second origin that knows
 * nothing of API tokens and serves archives by expiring signed URL, with ranges for resuming.
 */
export class ArchiveStorage {
  private readonly secret = randomBytes(32);
  private readonly archives = new Map<string, () => Promise<BuiltArchive | undefined>>();

  private readonly clock: SandboxClock;
  private readonly faults: Faults;
  private readonly urlTtlMs: number;

  constructor(clock: SandboxClock, faults: Faults, urlTtlMs: number) {
    this.clock = clock;
    this.faults = faults;
    this.urlTtlMs = urlTtlMs;
  }

  /** Makes `guid` downloadable; `lookup` answers undefined once the archive is gone. */
  register(guid: string, lookup: () => Promise<BuiltArchive | undefined>): void {
    this.archives.set(guid, lookup);
  }

  signedUrl(origin: string, guid: string): string {
    const expires = Math.floor((this.clock.now() + this.urlTtlMs) / 1000);
    return `${origin}/archives/${guid}.tar.gz?expires=${expires}&signature=${this.sign(guid, expires)}`;
  }

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://storage');
    const match = /^\/archives\/([0-9a-f-]{36})\.tar\.gz$/.exec(url.pathname);
    if (!match?.[1] || (request.method !== 'GET' && request.method !== 'HEAD')) {
      return xmlError(response, 404, 'NoSuchKey', 'The specified key does not exist.');
    }
    const guid = match[1];
    const expires = Number(url.searchParams.get('expires'));
    if (!this.verify(guid, expires, url.searchParams.get('signature') ?? '')) {
      return xmlError(response, 403, 'SignatureDoesNotMatch', 'The request signature is not valid.');
    }
    const expired = !Number.isFinite(expires) || expires * 1000 < this.clock.now();
    if (expired || this.faults.takeStorageForbidden(request.headers.range !== undefined)) {
      return xmlError(response, 403, 'AccessDenied', 'Request has expired');
    }
    // A client gone during the stall (or a sandbox closing) has nothing left to be served: building
    // the archive then would write into a data directory being removed.
    if (this.faults.storageStallMs > 0 && !(await stall(this.faults.storageStallMs, request))) return;
    const archive = await this.archives.get(guid)?.();
    if (!archive) return xmlError(response, 404, 'NoSuchKey', 'The specified key does not exist.');

    // A buggy storage that answers a resume from another file of the same size, whatever If-Range says.
    const splice = request.headers.range !== undefined && this.faults.takeSplice();
    const etag = splice ? `"${archive.sha256.slice(0, 40)}-other"` : `"${archive.sha256}"`;
    const headers: Record<string, string | number> = {
      'content-type': 'application/gzip',
      etag,
      'last-modified': new Date(this.clock.now()).toUTCString(),
    };
    const allowRanges = !this.faults.noRange;
    if (allowRanges) headers['accept-ranges'] = 'bytes';

    let start = 0;
    let end = archive.size - 1;
    let status = 200;
    const range = request.headers.range;
    const ifRange = request.headers['if-range'];
    if (allowRanges && range && (ifRange === undefined || ifRange === etag || splice)) {
      const parsed = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      const first = parsed?.[1] ? Number(parsed[1]) : undefined;
      const last = parsed?.[2] ? Number(parsed[2]) : undefined;
      if (!parsed || (first === undefined && last === undefined)) {
        return xmlError(response, 416, 'InvalidRange', 'The requested range is not satisfiable', archive.size);
      }
      if (first === undefined) start = Math.max(0, archive.size - (last ?? 0));
      else {
        start = first;
        if (last !== undefined) end = Math.min(last, archive.size - 1);
      }
      if (start >= archive.size || start > end) {
        return xmlError(response, 416, 'InvalidRange', 'The requested range is not satisfiable', archive.size);
      }
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${archive.size}`;
    }
    headers['content-length'] = end - start + 1;
    response.writeHead(status, headers);
    if (request.method === 'HEAD' || archive.size === 0) {
      response.end();
      return;
    }
    const stages: NodeJS.ReadWriteStream[] = [];
    if (splice) stages.push(altered(start));
    else if (this.faults.corruptArchive) stages.push(altered(start, Math.floor(archive.size / 2)));
    const throttle = this.faults.throttleBytesPerSecond;
    if (throttle) stages.push(throttled(throttle));
    const cutAfter = this.faults.takeCut(start, end);
    if (cutAfter !== undefined) stages.push(cutter(cutAfter, response));
    try {
      await pipeline([archive.open(start, end), ...stages, response]);
    } catch {
      // The client went away or a fault cut the stream; nothing to clean up.
    }
  }

  private sign(guid: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${guid}.${expires}`).digest('hex');
  }

  private verify(guid: string, expires: number, signature: string): boolean {
    const expected = Buffer.from(this.sign(guid, expires));
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/** Waits `ms` before answering; false if the client went away meanwhile (the wait then ends at once). */
function stall(ms: number, request: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(true), ms);
    const gone = () => done(false);
    function done(connected: boolean) {
      clearTimeout(timer);
      request.socket.off('close', gone);
      resolve(connected);
    }
    request.socket.once('close', gone);
  });
}

function xmlError(response: ServerResponse, status: number, code: string, message: string, size?: number): void {
  const headers: Record<string, string> = { 'content-type': 'application/xml' };
  if (size !== undefined) headers['content-range'] = `bytes */${size}`;
  response.writeHead(status, headers);
  response.end(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>\n`,
  );
}

/** Flips the bits of every byte, or only of the byte at archive offset `only` (the stream starts at `start`). */
function altered(start: number, only?: number): Transform {
  let offset = start;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const at = offset;
      offset += chunk.length;
      if (only !== undefined && (only < at || only >= offset)) return done(null, chunk);
      const copy = Buffer.from(chunk);
      if (only !== undefined) copy[only - at] = (copy[only - at] as number) ^ 0xff;
      else for (let i = 0; i < copy.length; i++) copy[i] = (copy[i] as number) ^ 0xff;
      done(null, copy);
    },
  });
}

/** Passes at most `bytesPerSecond` through, in 50 ms slices. */
function throttled(bytesPerSecond: number): Transform {
  const slice = Math.max(1, Math.floor(bytesPerSecond / 20));
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const pieces: Buffer[] = [];
      for (let offset = 0; offset < chunk.length; offset += slice) pieces.push(chunk.subarray(offset, offset + slice));
      const push = () => {
        const piece = pieces.shift();
        if (!piece) return done();
        this.push(piece);
        setTimeout(push, 50);
      };
      push();
    },
  });
}

/** Sends `bytes` bytes, then drops the connection as a flaky network would. */
function cutter(bytes: number, response: ServerResponse): Transform {
  let left = bytes;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (left <= 0) return done();
      const piece = chunk.length <= left ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      this.push(piece);
      if (left <= 0) {
        // Cut mid-body only once every byte before the cut has left this stage, the response and
        // the socket's queue: a piece may still be on its way when the cut is reached.
        const socket = response.socket;
        const cut = () => {
          if (!socket || socket.destroyed) return;
          if (this.readableLength > 0 || response.writableLength > 0) setTimeout(cut, 1);
          else socket.destroy();
        };
        setImmediate(cut);
      }
      done();
    },
  });
}
