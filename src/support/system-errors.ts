import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { CliError, ExitCode } from '../errors.js';

/**
 * The one table from operating-system errors (errno codes) to what the user reads and the exit
 * code. A failure of the user's machine or of a path or port they chose is never "a bug": it gets
 * a message naming the path or port and a hint, and exits 2 (fix the input or the machine and run
 * again). Commands add what they know (the flag, what the path was for); the program's last
 * resort in main.ts maps any stray system error through here too.
 */

export interface FileContext {
  /** What was being done: "write", "read", "create the directory". */
  action?: string;
  /** The path as the user gave it (the error's own path otherwise). */
  path?: string;
  /** What the path is for, e.g. "the config directory" or "--output". */
  role?: string;
  /** Appended to the hint: what is kept, or how to carry on. */
  after?: string;
}

export interface PortContext {
  port?: number;
  host?: string;
  /** The flag that chose the port, e.g. "--port". */
  flag?: string;
}

/** A Node system error (fs, net): it carries an errno code such as ENOENT. */
export function isSystemError(error: unknown): error is NodeJS.ErrnoException & { address?: string; port?: number } {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as NodeJS.ErrnoException;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) && (typeof syscall === 'string' || 'errno' in error);
}

const NETWORK_CALLS = new Set(['listen', 'bind', 'connect', 'getaddrinfo']);

/** Maps any system error to a CliError; anything else is returned as it is. */
export function fromSystemError(error: unknown, context: FileContext & PortContext = {}): unknown {
  if (error instanceof CliError || !isSystemError(error)) return error;
  if (error.syscall && NETWORK_CALLS.has(error.syscall) && error.code !== 'ENOENT') return portError(error, context);
  return fileError(error, context);
}

/** A file or directory that could not be read, written or created. */
export function fileError(error: NodeJS.ErrnoException, context: FileContext = {}): CliError {
  // A rename fails because of where it goes: name the destination.
  const dest = error.syscall === 'rename' ? (error as NodeJS.ErrnoException & { dest?: string }).dest : undefined;
  const path = context.path ?? dest ?? error.path ?? 'the file';
  const action = context.action ?? actionOf(error.syscall);
  const role = context.role ? ` (${context.role})` : '';
  const subject = `cannot ${action} ${path}${role}`;
  const after = context.after ? `; ${context.after}` : '';
  const reading = /^(read|open|load)/.test(action);
  const [reason, hint] = fileReason(error.code ?? '', path, reading);
  return new CliError(`${subject}: ${reason}`, ExitCode.Usage, { hint: `${hint}${after}`, cause: error });
}

/** Why a file or directory could not be read, in words and with the system's code (ENOENT). */
export function readingReason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  if (code === undefined) return message;
  const [reason] = fileReason(code, '', true);
  return reason.includes(code) ? reason : `${reason} (${code})`;
}

function fileReason(code: string, path: string, reading: boolean): [string, string] {
  const parent = dirname(path);
  switch (code) {
    case 'ENOENT':
      if (reading) return ['no such file', 'check the name and the directory you run from'];
      // A missing directory and a file system that refuses new files (/proc, /sys) both say ENOENT.
      return existsSync(parent) && parent !== path
        ? [`${parent} does not allow creating it`, `choose a path in an ordinary directory instead of ${parent}`]
        : [`the directory ${parent} does not exist`, `create it (mkdir -p ${parent}) or choose another path`];
    case 'ENOTDIR':
      return ['a part of the path is a file, not a directory', 'check the path, or choose another one'];
    case 'EISDIR':
      return [`${path} is a directory`, 'name a file inside it, or another path'];
    case 'EEXIST':
      return [`${path} already exists`, 'remove it, or choose another path'];
    case 'EACCES':
    case 'EPERM':
      return ['permission denied', `check the permissions of ${parent} (ls -ld ${parent}), or choose another path`];
    case 'EROFS':
      return ['the file system is read-only', 'choose a path on a writable file system'];
    case 'ENOSPC':
      return ['no space left on the device', `free some space on the disk that holds ${parent}, or choose another path`];
    case 'EDQUOT':
      return ['the disk quota is exceeded', 'free some space within your quota, or choose another path'];
    case 'ENAMETOOLONG':
      return ['the name is too long', 'choose a shorter path'];
    case 'ELOOP':
      return ['too many symbolic links in the path', 'check the links in the path, or choose another path'];
    case 'EMFILE':
    case 'ENFILE':
      return ['too many open files', 'close other programs or raise the limit (ulimit -n), then run again'];
    case 'EIO':
      return ['an input/output error on the device', 'check the disk (dmesg), or choose another path'];
    case 'EBUSY':
    case 'ETXTBSY':
      return ['the file is busy', 'close the program using it, or choose another path'];
    case 'EXDEV':
      return ['it is on another file system than its temporary file', 'choose another path'];
    default:
      return [`the system refused (${code})`, 'check the path and its permissions, or choose another path'];
  }
}

function actionOf(syscall: string | undefined): string {
  switch (syscall) {
    case 'open':
      return 'open';
    case 'read':
    case 'scandir':
    case 'stat':
    case 'lstat':
      return 'read';
    case 'mkdir':
      return 'create the directory';
    case 'rename':
      return 'write';
    case 'unlink':
    case 'rm':
    case 'rmdir':
      return 'remove';
    default:
      return 'write';
  }
}

/** A port that could not be listened on. */
export function portError(error: NodeJS.ErrnoException & { address?: string; port?: number }, context: PortContext = {}): CliError {
  const port = context.port ?? error.port;
  const host = context.host ?? error.address ?? 'this machine';
  const flag = context.flag ?? '--port';
  const where = port === undefined ? host : `${host}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE':
      return new CliError(`port ${port ?? '?'} on ${host} is already in use`, ExitCode.Usage, {
        hint: `stop the program that uses it (\`ss -ltnp | grep :${port ?? ''}\` shows it), or choose another ${flag} (0 picks a free one)`,
        cause: error,
      });
    case 'EACCES':
    case 'EPERM':
      return new CliError(`not allowed to listen on ${where}`, ExitCode.Usage, {
        hint: `ports below 1024 need privileges; choose another ${flag} above 1023 (0 picks a free one)`,
        cause: error,
      });
    case 'EADDRNOTAVAIL':
      return new CliError(`${host} is not an address of this machine`, ExitCode.Usage, {
        hint: 'use 127.0.0.1 (this machine only) or an address of one of its network interfaces',
        cause: error,
      });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new CliError(`cannot resolve ${host}`, ExitCode.Usage, {
        hint: 'give an IP address such as 127.0.0.1, or a host name this machine resolves',
        cause: error,
      });
    default:
      return new CliError(`cannot listen on ${where}: the system refused (${error.code ?? 'unknown'})`, ExitCode.Usage, {
        hint: `choose another ${flag} or host`,
        cause: error,
      });
  }
}
