import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { ReceivedDelivery } from './receiver.js';

// A saved delivery is one file, `<delivery id>.http`: a comment line with when it arrived and in
// which order, the request line, the headers as received, a blank line, then the raw body bytes.

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

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120) || 'delivery';
}

/** Writes the delivery atomically (temp file, then rename), so a crash never leaves half a file. */
export async function saveDelivery(dir: string, delivery: ReceivedDelivery): Promise<string> {
  await mkdir(dir, { recursive: true });
  const lines = [
    `# svc-migrate delivery; received ${delivery.receivedAt}; sequence ${delivery.sequence}`,
    `${delivery.method} ${delivery.path} HTTP/1.1`,
  ];
  for (let i = 0; i < delivery.rawHeaders.length; i += 2) lines.push(`${delivery.rawHeaders[i]}: ${delivery.rawHeaders[i + 1]}`);
  const file = join(dir, `${safeName(delivery.id)}.http`);
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, Buffer.concat([Buffer.from(lines.join('\r\n')), SEPARATOR, delivery.rawBody]));
  await rename(temp, file);
  return file;
}

export function parseSaved(file: string, data: Buffer): SavedDelivery {
  const split = data.indexOf(SEPARATOR);
  if (split < 0) throw new Error(`${file} is not a saved delivery (no blank line after the headers)`);
  const [comment, requestLine, ...headerLines] = data.subarray(0, split).toString('utf8').split('\r\n');
  const meta = /received (\S+); sequence (\d+)/.exec(comment ?? '');
  const request = /^(\S+) (\S+) HTTP\/1\.1$/.exec(requestLine ?? '');
  if (!meta || !request) throw new Error(`${file} is not a saved delivery (no svc-migrate header)`);
  const rawHeaders: string[] = [];
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    rawHeaders.push(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''));
  }
  return {
    file,
    sequence: Number(meta[2]),
    receivedAt: meta[1] as string,
    method: request[1] as string,
    path: request[2] as string,
    rawHeaders,
    body: data.subarray(split + SEPARATOR.length),
  };
}

/** One saved delivery, or every `.http` file of a directory in arrival order. */
export async function loadDeliveries(path: string): Promise<SavedDelivery[]> {
  const info = await stat(path);
  const files = info.isDirectory()
    ? (await readdir(path)).filter((name) => name.endsWith('.http')).map((name) => join(path, name))
    : [path];
  const saved = await Promise.all(files.map(async (file) => parseSaved(basename(file), await readFile(file))));
  return saved.sort((a, b) => a.receivedAt.localeCompare(b.receivedAt) || a.sequence - b.sequence);
}
