import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { bitString, boolean, element, explicit, generalName, octetString, oid, sequence, set, time, unsignedInteger, utf8String } from './der.js';

// The sandbox's own certificate authority (`sandbox --tls`): made at start, it issues the one
// certificate both origins serve, for 127.0.0.1, ::1 and localhost, and its certificate is what a
// client is told to trust (--ca-file). Made with node:crypto: it makes the keys and the signatures,
// and an X.509 certificate around them is the few DER elements below (RFC 5280), which Node's
// X509Certificate, OpenSSL and curl read back (test/sandbox/certificates.test.ts). ECDSA P-256 keys:
// made in a millisecond, where an RSA key takes tens. The authority's key never leaves memory.

/** A key and its certificate, PEM, as node:tls and node:https take them. */
export interface Issued {
  key: string;
  cert: string;
}

interface IssueOptions {
  /** Host names and IP addresses the certificate is for (its subjectAltName); the first is its common name. */
  names: string[];
  /** Default: an hour ago, so that a clock a little behind still accepts it. */
  notBefore?: Date;
  /** Default: 30 days after `notBefore`'s default. */
  notAfter?: Date;
}

export interface CertificateAuthority {
  /** The authority's certificate, PEM: the file a client trusts. */
  certificate: string;
  /** A server certificate signed by this authority. */
  issue(options: IssueOptions): Issued;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const OIDS = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extendedKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
};

/** keyUsage bits (RFC 5280 4.2.1.3): digitalSignature is bit 0, keyCertSign 5, cRLSign 6. */
const KEY_USAGE = { server: bitString(Buffer.from([0x80]), 7), authority: bitString(Buffer.from([0x06]), 1) };

/** Makes an authority named `name`, valid from an hour before `now` for 30 days. */
export function createAuthority(name: string, now = new Date()): CertificateAuthority {
  const keys = newKeys();
  const subject = distinguishedName(name);
  const keyId = keyIdentifier(keys.publicKey);
  const certificate = signedCertificate({
    subject,
    issuer: subject,
    publicKey: keys.publicKey,
    signer: keys.privateKey,
    notBefore: new Date(now.getTime() - HOUR),
    notAfter: new Date(now.getTime() + 30 * DAY),
    extensions: [
      extension(OIDS.basicConstraints, true, sequence(boolean(true), unsignedInteger(Buffer.from([0])))),
      extension(OIDS.keyUsage, true, KEY_USAGE.authority),
      extension(OIDS.subjectKeyIdentifier, false, octetString(keyId)),
    ],
  });
  return {
    certificate,
    issue({ names, notBefore = new Date(now.getTime() - HOUR), notAfter = new Date(now.getTime() + 30 * DAY) }) {
      const leaf = newKeys();
      const cert = signedCertificate({
        subject: distinguishedName(names[0] ?? 'localhost'),
        issuer: subject,
        publicKey: leaf.publicKey,
        signer: keys.privateKey,
        notBefore,
        notAfter,
        extensions: [
          extension(OIDS.basicConstraints, true, sequence()),
          extension(OIDS.keyUsage, true, KEY_USAGE.server),
          extension(OIDS.extendedKeyUsage, false, sequence(oid(OIDS.serverAuth))),
          extension(OIDS.subjectAltName, false, sequence(...names.map(generalName))),
          extension(OIDS.subjectKeyIdentifier, false, octetString(keyIdentifier(leaf.publicKey))),
          extension(OIDS.authorityKeyIdentifier, false, sequence(element(0x80, keyId))),
        ],
      });
      return { key: leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert };
    },
  };
}

function newKeys(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function distinguishedName(commonName: string): Buffer {
  const attribute = (type: string, value: string) => set(sequence(oid(type), utf8String(value)));
  return sequence(attribute(OIDS.organization, 'svc-migrate sandbox'), attribute(OIDS.commonName, commonName));
}

/** RFC 5280 4.2.1.2, method 1: the SHA-1 of the public key's bits. */
function keyIdentifier(publicKey: KeyObject): Buffer {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  // The key's bits are the BIT STRING that ends the SubjectPublicKeyInfo; for P-256, its last 65 bytes.
  return createHash('sha1').update(spki.subarray(spki.length - 65)).digest();
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

interface Unsigned {
  subject: Buffer;
  issuer: Buffer;
  publicKey: KeyObject;
  signer: KeyObject;
  notBefore: Date;
  notAfter: Date;
  extensions: Buffer[];
}

/** RFC 5280 4.1: the TBSCertificate, signed by `signer` with ECDSA and SHA-256, as PEM. */
function signedCertificate({ subject, issuer, publicKey, signer, notBefore, notAfter, extensions }: Unsigned): string {
  const algorithm = sequence(oid(OIDS.ecdsaWithSha256));
  // A positive serial of at most 20 bytes, unpredictable (CA/Browser Forum: 64 bits or more).
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f | 0x01;
  const toBeSigned = sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))), // v3
    unsignedInteger(serial),
    algorithm,
    issuer,
    sequence(time(notBefore), time(notAfter)),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
  const signature = sign('sha256', toBeSigned, signer);
  const der = sequence(toBeSigned, algorithm, bitString(signature));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
