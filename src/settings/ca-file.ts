import { X509Certificate } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { fromSystemError } from '../support/system-errors.js';

// The file of an organization's certificate authority (--ca-file, SVC_CA_FILE, the stored caFile),
// read and checked before any request: a file that is missing, unreadable or holds no certificate
// is the user's to fix (exit 2), not a TLS failure to puzzle over later.

/** A file of CA certificates is kilobytes; the whole Mozilla list is 220 KB. */
const LIMIT = 4 << 20;

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * The PEM certificates of the file at `path`, each one read by node:crypto. `role` says where the
 * path came from (`--ca-file`, `SVC_CA_FILE`, `the stored caFile`), for the message.
 */
export function readCaFile(path: string, role: string): string[] {
  const text = readBounded(path, role).toString('latin1');
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) {
    // A DER certificate starts with a SEQUENCE (0x30 0x82 …).
    const der = text.charCodeAt(0) === 0x30;
    throw new UsageError(`${path} (${role}) holds no certificate in PEM form (-----BEGIN CERTIFICATE-----)`, {
      hint: der
        ? `it looks like a DER certificate: \`openssl x509 -inform der -in ${path} -out ca.pem\` makes the PEM file to pass`
        : 'pass the certificate of your organization\'s certificate authority, in PEM form',
    });
  }
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block);
    } catch (error) {
      const which = blocks.length === 1 ? 'the certificate' : `certificate ${i + 1} of ${blocks.length}`;
      throw new UsageError(`${which} in ${path} (${role}) cannot be read: ${(error as Error).message}`, {
        hint: 'export the certificate of your organization\'s certificate authority again, in PEM form',
      });
    }
  });
  return blocks;
}

/**
 * The file's bytes, at most LIMIT. Opened without blocking and only read when it is a regular file:
 * opening a FIFO no one writes to would block the program where not even Ctrl-C ends it, and a
 * device or a pipe may never end. A pipe (`<(command)`) is refused too: nothing here waits for it.
 */
function readBounded(path: string, role: string): Buffer {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = fstatSync(fd);
    // A directory is let through to the read, which names it as one (EISDIR).
    if (!stats.isFile() && !stats.isDirectory()) {
      throw new UsageError(`${path} (${role}) is not a regular file`, { hint: 'write the certificates of your organization\'s certificate authority to a file, and pass that file' });
    }
    const buffer = Buffer.alloc(LIMIT + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length <= LIMIT; length += read) read = readSync(fd, buffer, length, buffer.length - length, null);
    if (length > LIMIT) throw new UsageError(`${path} (${role}) holds more than ${LIMIT >> 20} MiB: not a file of CA certificates`);
    return buffer.subarray(0, length);
  } catch (error) {
    throw fromSystemError(error, { action: 'read', path, role });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
