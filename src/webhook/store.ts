import { createHash, randomBytes } from 'node:crypto';
import { constants, unlinkSync } from 'node:fs';
import { chmod, type FileHandle, link, lstat, open, readdir, realpath, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDirectory } from '../support/make-directory.js';
import { fileError, readingReason } from '../support/system-errors.js';
import { MAX_PAYLOAD_BYTES } from './delivery.js';
import type { ReceivedDelivery } from './receiver.js';

/** A field name (an RFC 9110 token) and value (no control but HTAB) as a receiver accepts them. */
export const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Fields a request may carry once at most: a saved delivery holds them once. */
const SINGLE_FIELDS = new Set(['content-length', 'host', 'content-type']);

// A saved delivery is one file, `<name>.http` (deliveryFileName): a comment line with when it
// arrived and in which order, the request line, the headers as received, a blank line, then the
// raw body bytes. Payloads of private repositories end up there: files are 0600 in a 0700
// directory, created exclusively (never through a link someone planted), written to a temporary
// name of their own, flushed to disk, then given their name, so no reader ever sees half a
// delivery. A name already taken (the same id again, with --no-dedupe or past the remembered ids)
// is never replaced: the new file is `<name>~2.http`, `~3`…

export interface SavedDelivery {
  file: string;
  sequence: number;
  receivedAt: string;
  method: string;
  path: string;
  /** Header names and values as received, in order. */
  rawHeaders: string[];
  body: Buffer;
}

const SEPARATOR = Buffer.from('\r\n\r\n');
const SAFE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/;

/**
 * Temporary files being written. A process that ends at once (a second Ctrl-C) removes them on
 * its way out: none of them holds a delivery answered 2xx, and none is left behind.
 */
const unfinished = new Set<string>();
function removeUnfinished(): void {
  for (const temp of unfinished) {
    try {
      unlinkSync(temp);
    } catch {
      // Renamed or removed meanwhile.
    }
  }
}
function track(temp: string): void {
  if (unfinished.size === 0) process.on('exit', removeUnfinished);
  unfinished.add(temp);
}
function untrack(temp: string): void {
  unfinished.delete(temp);
  if (unfinished.size === 0) process.off('exit', removeUnfinished);
}

/** A user's mistake about the save directory (not ours, a file, unreadable), with what to do. */
export class StoreError extends Error {
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }
}

/**
 * The file a delivery id is saved under. A plain id (a GUID, as the service sends) is its own name;
 * anything else is sanitised, cut, and followed by `~` and 128 bits of its SHA-256, so `a/b`, `a_b`
 * and two ids equal in their first characters never share a file. `~` never occurs in a plain
 * name, so the two forms cannot meet either.
 */
function deliveryFileName(id: string): string {
  if (SAFE_ID.test(id)) return `${id}.http`;
  const readable = id.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\./, '_').slice(0, 80);
  return `${readable}~${createHash('sha256').update(id).digest('hex').slice(0, 32)}.http`;
}

export interface DeliveryStore {
  /** The directory as given, and as resolved at start (where deliveries are saved). */
  dir: string;
  resolved: string;
  /** True when an existing directory was open to others and was made private. */
  tightened: boolean;
  /** Resolves with the file once the delivery and its name are on disk. */
  save(delivery: ReceivedDelivery): Promise<string>;
}

/** Prepares `dir` (created 0700; an existing one must be ours and is made 0700) for saving. */
export async function openStore(dir: string): Promise<DeliveryStore> {
  try {
    makeDirectory(dir);
  } catch (error) {
    throw storeError(dir, error);
  }
  const info = await stat(dir).catch((error: unknown) => {
    throw storeError(dir, error);
  });
  if (!info.isDirectory()) throw new StoreError(`--save ${dir} is not a directory`, 'name a directory (it is created if missing)');
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new StoreError(
      `--save ${dir} belongs to user ${info.uid}, not to you (${uid}): saved deliveries hold private payloads`,
      'use a directory of your own, e.g. --save ~/deliveries',
    );
  }
  // Saves go to the path the directory had at start, links resolved: a link in the given path (a
  // planted one, in a shared /tmp) that is swapped later cannot send them elsewhere. Before each
  // save that path is checked again, not followed if it became a link, and must still be a private
  // directory of ours: one replaced by anything else is refused (500), never written to unchecked.
  const real = await realpath(dir).catch((error: unknown) => {
    throw storeError(dir, error);
  });
  const stillOurs = async () => {
    const now = await lstat(real).catch(() => undefined);
    if (!now) return `${real} is gone`;
    if (now.isSymbolicLink()) return `${real} is a link now`;
    if (!now.isDirectory()) return `${real} is no longer a directory`;
    if (uid !== undefined && now.uid !== uid) return `${real} belongs to user ${now.uid} now`;
    if ((now.mode & 0o077) !== 0) return `${real} is open to other users now (mode ${(now.mode & 0o777).toString(8)})`;
    return undefined;
  };
  let tightened = false;
  if ((info.mode & 0o077) !== 0) {
    await chmod(real, 0o700);
    tightened = true;
  }
  const syncDir = groupCommit(async () => {
    const handle = await open(real, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
  return {
    dir,
    resolved: real,
    tightened,
    async save(delivery) {
      const name = deliveryFileName(delivery.id);
      const problem = await stillOurs();
      if (problem) throw new Error(`could not save ${name}: the save directory ${problem}`);
      let file: string;
      const temp = join(real, `.${name}.${randomBytes(8).toString('hex')}.tmp`);
      let handle: FileHandle | undefined;
      track(temp);
      try {
        // O_EXCL: a fresh file or nothing; a link or file planted under this name is an error, not a target.
        handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
        await writeAll(handle, [headBytes(delivery), delivery.rawBody]);
        await handle.sync();
        await handle.close();
        handle = undefined;
        file = await publish(temp, real, name);
      } catch (error) {
        await handle?.close().catch(() => {});
        await unlink(temp).catch(() => {});
        throw new Error(`could not save ${name} in ${dir}: ${(error as Error).message}`);
      } finally {
        untrack(temp);
      }
      // The rename is durable once the directory is: saves that finish together share one flush.
      await syncDir().catch((error: unknown) => {
        throw new Error(`could not flush ${dir} after saving ${name}: ${(error as Error).message}`);
      });
      return file;
    },
  };
}

/** Names this process is giving a file at the moment. */
const publishing = new Set<string>();

/**
 * Gives the finished file at `temp` its name: `name`, or `name` with ~2, ~3… where that is taken.
 * A hard link fails rather than replace a file; where the file system has none (FAT, some network
 * shares), a rename after a check, with `publishing` keeping this process's saves apart.
 */
async function publish(temp: string, dir: string, name: string): Promise<string> {
  const base = name.slice(0, -'.http'.length);
  for (let copy = 1; ; copy++) {
    const file = join(dir, copy === 1 ? name : `${base}~${copy}.http`);
    if (publishing.has(file)) continue;
    publishing.add(file);
    try {
      if (await placed(temp, file)) return file;
    } finally {
      publishing.delete(file);
    }
  }
}

const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

/** Whether `temp` now has the name `file`; false when `file` exists. */
async function placed(temp: string, file: string): Promise<boolean> {
  try {
    await link(temp, file);
    await unlink(temp).catch(() => {});
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (code === 'EEXIST') return false;
    if (!NO_HARD_LINKS.has(code)) throw error;
  }
  const taken = await lstat(file).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );
  if (!taken) await rename(temp, file);
  return !taken;
}

function storeError(dir: string, error: unknown): StoreError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return new StoreError(`cannot create or use --save ${dir}: permission denied`, 'choose a directory you can write to');
  if (code === 'ENOTDIR' || code === 'EEXIST') return new StoreError(`--save ${dir} is not a directory`, 'name a directory (it is created if missing)');
  const failure = fileError(error as NodeJS.ErrnoException, { action: 'create the directory', path: dir, role: '--save' });
  return new StoreError(failure.message, failure.hint);
}

function headBytes(delivery: ReceivedDelivery): Buffer {
  const lines = [
    `# svc-migrate delivery; received ${delivery.receivedAt}; sequence ${delivery.sequence}`,
    `${delivery.method} ${delivery.path} HTTP/1.1`,
  ];
  const rawHeaders = delivery.rawHeaders();
  for (let i = 0; i < rawHeaders.length; i += 2) lines.push(`${rawHeaders[i]}: ${rawHeaders[i + 1]}`);
  // The server read the head as latin1, a character a byte: written back so, it is the bytes received.
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

async function writeAll(handle: FileHandle, buffers: Buffer[]): Promise<void> {
  let rest = buffers.filter((buffer) => buffer.length > 0);
  while (rest.length > 0) {
    let { bytesWritten } = await handle.writev(rest);
    const next: Buffer[] = [];
    for (const buffer of rest) {
      if (bytesWritten >= buffer.length) bytesWritten -= buffer.length;
      else {
        next.push(buffer.subarray(bytesWritten));
        bytesWritten = 0;
      }
    }
    rest = next;
  }
}

/**
 * Runs `flush` for every caller, sharing runs: a caller joins the next run that starts after it
 * asked, never one already under way (that one may have started before the caller's rename).
 */
function groupCommit(flush: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const start = (): Promise<void> => {
    running = flush().finally(() => {
      running = undefined;
    });
    return running;
  };
  return () => {
    if (!running) return start();
    queued ??= running
      .catch(() => {})
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
}

export function parseSaved(file: string, data: Buffer): SavedDelivery {
  const split = data.indexOf(SEPARATOR);
  if (split < 0) {
    const converted = data.subarray(0, 200).toString('latin1').startsWith('# svc-migrate delivery;') && data.includes('\n\n');
    throw new Error(`${file} is not a saved delivery (${converted ? 'its lines end in LF, not CRLF: was it converted?' : 'no blank line after the headers'})`);
  }
  const [comment, requestLine, ...headerLines] = data.subarray(0, split).toString('latin1').split('\r\n');
  const meta = /received (\S+); sequence (\d+)/.exec(comment ?? '');
  const request = /^(\S+) (\S+) HTTP\/1\.1$/.exec(requestLine ?? '');
  if (!meta || !request) throw new Error(`${file} is not a saved delivery (no svc-migrate header)`);
  // What the receiver saves, and so all a saved file can hold: a POST, each field once where only
  // one may be, values without the spaces around them that the server's reading drops.
  if (request[1] !== 'POST') throw new Error(`${file} is not a saved delivery (a ${request[1]} request; deliveries are POSTs)`);
  const rawHeaders: string[] = [];
  const body = data.subarray(split + SEPARATOR.length);
  const seen = new Set<string>();
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`${file} is not a saved delivery (a header line without a name)`);
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^ /, '');
    const key = name.toLowerCase();
    if (!FIELD_NAME.test(name) || !FIELD_VALUE.test(value) || /^[ \t]|[ \t]$/.test(value)) {
      throw new Error(`${file} is not a saved delivery (a malformed header line)`);
    }
    if (SINGLE_FIELDS.has(key) && seen.has(key)) throw new Error(`${file} is not a saved delivery (more than one ${name} field)`);
    if (key === 'content-length' && (!/^\d{1,15}$/.test(value) || Number(value) !== body.length)) {
      throw new Error(`${file} is not a saved delivery (its Content-Length does not match its body of ${body.length} bytes)`);
    }
    seen.add(key);
    rawHeaders.push(name, value);
  }
  return {
    file,
    sequence: Number(meta[2]),
    receivedAt: meta[1] as string,
    method: request[1],
    path: request[2] as string,
    rawHeaders,
    body,
  };
}

/**
 * The largest file replay reads: a form body of the largest payload (three bytes for one when
 * percent-encoded, docs/service.md#limits) and its headers.
 */
const MAX_SAVED_BYTES = MAX_PAYLOAD_BYTES * 3 + 1024 * 1024;

/** A saved delivery found by listSaved: where it is, and its place in arrival order. */
export interface SavedEntry {
  file: Buffer;
  name: string;
  sequence: number;
  receivedAt: string;
}

export interface Unreadable {
  name: string;
  reason: string;
}

/**
 * The deliveries of a directory (or one file) in arrival order, read from their first line only;
 * what is not a regular, readable, saved delivery is listed with the reason instead.
 */
export async function listSaved(path: string): Promise<{ entries: SavedEntry[]; unreadable: Unreadable[] }> {
  const info = await stat(path);
  // Names as bytes: one that is not UTF-8 is still a name the file can be opened by.
  const prefix = Buffer.from(join(path, '/'));
  const candidates = info.isDirectory()
    ? (await readdir(path, { encoding: 'buffer' }))
        .filter((name) => name.toString('latin1').endsWith('.http'))
        .sort((a, b) => Buffer.compare(a, b))
        .map((name) => ({ name: name.toString(), file: Buffer.concat([prefix, name]) }))
    : [{ name: path, file: Buffer.from(path) }];
  const entries: SavedEntry[] = [];
  const unreadable: Unreadable[] = [];
  for (const candidate of candidates) {
    try {
      const head = await readSaved(candidate.file, 4096);
      const meta = /^# svc-migrate delivery; received (\S+); sequence (\d+)\r\n/.exec(head.toString('utf8'));
      if (!meta) throw new Error('not a saved delivery (no svc-migrate header)');
      entries.push({ file: candidate.file, name: candidate.name, receivedAt: meta[1] as string, sequence: Number(meta[2]) });
    } catch (error) {
      unreadable.push({ name: candidate.name, reason: (error as Error).message });
    }
  }
  entries.sort((a, b) => a.receivedAt.localeCompare(b.receivedAt) || a.sequence - b.sequence);
  return { entries, unreadable };
}

/**
 * At most `limit` bytes of a regular file (the whole of it when `limit` is undefined, refused
 * above MAX_SAVED_BYTES). Opened without waiting (a FIFO would block an open for reading) and
 * without following a final link, then checked on the descriptor itself.
 */
export async function readSaved(file: string | Buffer, limit?: number): Promise<Buffer> {
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
  const handle = await open(file, flags).catch((error: NodeJS.ErrnoException) => {
    throw new Error(error.code === 'ELOOP' ? 'a symbolic link, not a file' : readingReason(error));
  });
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error('not a regular file');
    if (limit === undefined && info.size > MAX_SAVED_BYTES) throw new Error(`${info.size} bytes, more than any delivery (${MAX_SAVED_BYTES})`);
    const size = Math.min(info.size, limit ?? info.size);
    const buffer = Buffer.allocUnsafe(size);
    let read = 0;
    while (read < size) {
      const { bytesRead } = await handle.read(buffer, read, size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read);
  } finally {
    await handle.close();
  }
}
