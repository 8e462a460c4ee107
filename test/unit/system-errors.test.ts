import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/errors.js';
import { fileError, fromSystemError, portError } from '../../src/support/system-errors.js';

const systemError = (code: string, syscall: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(`${code}: ${syscall}`), { code, syscall, errno: -1, ...extra });

describe('the errno table', () => {
  const cases: [string, RegExp, RegExp][] = [
    ['ENOSPC', /no space left/, /free some space/],
    ['EDQUOT', /quota/, /free some space/],
    ['EROFS', /read-only/, /writable file system/],
    ['EACCES', /permission denied/, /ls -ld \/data\/out/],
    ['EPERM', /permission denied/, /ls -ld/],
    ['EISDIR', /\/data\/out\/a\.tgz is a directory/, /name a file inside it/],
    ['ENOTDIR', /not a directory/, /check the path/],
    ['EIO', /input\/output error/, /check the disk/],
    ['EMFILE', /too many open files/, /ulimit -n/],
    ['EWHATEVER', /refused \(EWHATEVER\)/, /choose another path/],
  ];
  for (const [code, message, hint] of cases) {
    it(`${code} names the path, gives a hint and exits 2`, () => {
      const error = fileError(systemError(code, 'open'), { action: 'write', path: '/data/out/a.tgz' });
      expect(error).toBeInstanceOf(CliError);
      expect(error.exitCode).toBe(2);
      expect(error.message).toMatch(/^cannot write \/data\/out\/a\.tgz: /);
      expect(error.message).toMatch(message);
      expect(error.hint).toMatch(hint);
    });
  }

  it('ENOENT when reading is a missing file; when writing, a missing directory', () => {
    expect(fileError(systemError('ENOENT', 'open'), { action: 'read', path: 'nofile.txt' }).message).toBe(
      'cannot read nofile.txt: no such file',
    );
    expect(fileError(systemError('ENOENT', 'open'), { action: 'write', path: '/no/such/dir/a' }).message).toMatch(
      /the directory \/no\/such\/dir does not exist/,
    );
  });

  it('ports: busy, privileged, not an address of this machine', () => {
    const busy = portError(systemError('EADDRINUSE', 'listen', { address: '127.0.0.1', port: 8787 }));
    expect(busy.message).toBe('port 8787 on 127.0.0.1 is already in use');
    expect(busy.hint).toMatch(/--port \(0 picks a free one\)/);
    expect(portError(systemError('EACCES', 'listen', { address: '127.0.0.1', port: 80 })).hint).toMatch(/above 1023/);
    expect(portError(systemError('EADDRNOTAVAIL', 'listen', { address: '10.9.9.9', port: 1 })).message).toMatch(
      /10\.9\.9\.9 is not an address of this machine/,
    );
  });

  it('leaves errors that are not system errors alone', () => {
    const bug = new TypeError('x is undefined');
    expect(fromSystemError(bug)).toBe(bug);
    const known = new CliError('known', 3);
    expect(fromSystemError(known)).toBe(known);
    expect(fromSystemError(systemError('EADDRINUSE', 'listen', { port: 1 }))).toBeInstanceOf(CliError);
  });
});
