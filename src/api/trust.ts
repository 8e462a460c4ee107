import { readFileSync } from 'node:fs';
import * as tls from 'node:tls';

// The certificate authorities the client trusts with --ca-file: Node's own, and the user's on top.

/**
 * Said on every connection: Node's own default for `rejectUnauthorized` reads
 * NODE_TLS_REJECT_UNAUTHORIZED, and that variable, left set to 0 in a shell or a CI job, would
 * otherwise turn every certificate check off and send the token to whoever answers.
 */
export const ALWAYS_VERIFY = { rejectUnauthorized: true } as const;

/** What the user adds to Node's trust: --ca-file, SVC_CA_FILE or the stored caFile, read and checked (settings/ca-file.ts). */
export interface ExtraTrust {
  /** PEM certificates. */
  certificates: string[];
  /** NODE_EXTRA_CA_CERTS, the path Node read at start-up; only Node 20 needs it here (see below). */
  nodeExtraCaCerts?: string | undefined;
}

/**
 * One TLS context for every connection of a client: Node's default authorities and the user's.
 * Node takes a list of authorities only in place of its own (`ca`), so its own are named: on Node
 * 22.15 and later, `tls.getCACertificates('default')` is exactly what its clients trust (its
 * bundled list, NODE_EXTRA_CA_CERTS, and the system's store under --use-system-ca); Node 20 has
 * no such call, and there its bundled list and the NODE_EXTRA_CA_CERTS file make the same set. Made
 * once: a context given by its `ca` would be built again, 150 certificates parsed, for each connection.
 */
export function secureContextFor(trust: ExtraTrust): tls.SecureContext {
  return tls.createSecureContext({ ca: [...nodeDefaults(trust.nodeExtraCaCerts), ...trust.certificates] });
}

function nodeDefaults(nodeExtraCaCerts: string | undefined): readonly string[] {
  const { getCACertificates } = tls as { getCACertificates?: (type: 'default') => string[] };
  if (getCACertificates) return getCACertificates('default');
  if (!nodeExtraCaCerts) return tls.rootCertificates;
  try {
    return [...tls.rootCertificates, readFileSync(nodeExtraCaCerts, 'utf8')];
  } catch {
    // Node warned at start-up that it could not read it, and trusts its own list without it.
    return tls.rootCertificates;
  }
}
