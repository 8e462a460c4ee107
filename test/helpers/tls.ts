import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CertificateAuthority, createAuthority, type Issued } from '../../src/sandbox/certificates.js';

// Certificate authorities for tests that serve HTTPS themselves (stubs, scripted servers): the
// sandbox's own maker (src/sandbox/certificates.ts), each authority's certificate in a file to pass
// as --ca-file, SVC_CA_FILE or NODE_EXTRA_CA_CERTS.

const DAY = 86_400_000;

export interface TestAuthority extends CertificateAuthority {
  /** A file holding the authority's certificate (PEM). */
  file: string;
}

export function testAuthority(name = 'svc-migrate test CA'): TestAuthority {
  const authority = createAuthority(name);
  const file = join(mkdtempSync(join(tmpdir(), 'svc-ca-')), 'ca.pem');
  writeFileSync(file, authority.certificate);
  return { ...authority, file };
}

let shared: TestAuthority | undefined;

/** One authority for the test files of a worker that only need a trusted certificate. */
export function sharedAuthority(): TestAuthority {
  return (shared ??= testAuthority());
}

/** For 127.0.0.1, ::1 and localhost, valid now: what the sandbox serves. */
export function loopbackCertificate(authority: CertificateAuthority): Issued {
  return authority.issue({ names: ['localhost', '127.0.0.1', '::1'] });
}

/** For 127.0.0.1, expired yesterday. */
export function expiredCertificate(authority: CertificateAuthority): Issued {
  // eslint-disable-next-line no-restricted-syntax -- TLS judges a certificate's dates by the machine's time, so "expired" is relative to it
  return authority.issue({ names: ['127.0.0.1'], notBefore: new Date(Date.now() - 30 * DAY), notAfter: new Date(Date.now() - DAY) });
}
