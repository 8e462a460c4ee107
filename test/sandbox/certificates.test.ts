import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createAuthority } from '../../src/sandbox/certificates.js';
import { testSandbox } from '../helpers/sandbox.js';

const exec = promisify(execFile);

// The sandbox's certificates are made by hand from node:crypto's keys and signatures: Node, OpenSSL
// (strict) and curl must all read them as what they claim to be.

describe('the sandbox\'s certificate authority', () => {
  it('issues a server certificate Node reads back: its names, its issuer, its signature, its dates', () => {
    const authority = createAuthority('test CA', new Date('2030-01-01T00:00:00Z'));
    const ca = new X509Certificate(authority.certificate);
    const served = new X509Certificate(authority.issue({ names: ['localhost', '127.0.0.1', '::1'] }).cert);
    expect(ca.ca).toBe(true);
    expect(served.ca).toBe(false);
    expect(served.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(served.checkIssued(ca)).toBe(true);
    expect(served.verify(ca.publicKey)).toBe(true);
    expect(served.checkHost('localhost')).toBe('localhost');
    expect(served.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(served.checkIP('::1')).toBe('::1');
    expect(new Date(served.validFrom).toISOString()).toBe('2029-12-31T23:00:00.000Z');
    expect(new Date(served.validTo).toISOString()).toBe('2030-01-31T00:00:00.000Z');
  });

  it('writes dates from 2050 on as GeneralizedTime, as RFC 5280 has it', () => {
    const authority = createAuthority('test CA');
    const late = new X509Certificate(authority.issue({ names: ['localhost'], notAfter: new Date('2051-06-01T12:00:00Z') }).cert);
    expect(new Date(late.validTo).toISOString()).toBe('2051-06-01T12:00:00.000Z');
  });

  it('passes OpenSSL\'s strict check (openssl verify -x509_strict)', async () => {
    const authority = createAuthority('test CA');
    const dir = mkdtempSync(join(tmpdir(), 'svc-cert-'));
    writeFileSync(join(dir, 'ca.pem'), authority.certificate);
    writeFileSync(join(dir, 'server.pem'), authority.issue({ names: ['localhost', '127.0.0.1'] }).cert);
    const { stdout } = await exec('openssl', ['verify', '-x509_strict', '-purpose', 'sslserver', '-CAfile', join(dir, 'ca.pem'), join(dir, 'server.pem')]);
    expect(stdout.trim()).toBe(`${join(dir, 'server.pem')}: OK`);
  });

  it('serves both origins of a --tls sandbox to curl --cacert, and to nothing without it', async () => {
    const { sandbox } = await testSandbox({ tls: true });
    const ca = sandbox.ca!.file;
    const curl = (...args: string[]) => exec('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', ...args]);
    expect((await curl('--cacert', ca, `${sandbox.baseUrl}/_sandbox`)).stdout).toBe('200');
    expect((await curl('--cacert', ca, `${sandbox.storageOrigin}/nothing`)).stdout).toBe('404');
    await expect(curl(`${sandbox.baseUrl}/_sandbox`)).rejects.toThrow(/SSL certificate problem/);
  });
});
