import type { ChalkInstance } from 'chalk';
import { shellWord } from '../support/shell-word.js';

export interface SandboxInfo {
  base_url: string;
  storage_origin: string;
  /** With --tls: the CA certificate to trust (--ca-file). */
  ca_file?: string;
  org: string;
  token: string;
  tokens: { token: string; kind: string; user: string; revoked: boolean; label: string }[];
}

export function sandboxBanner(info: SandboxInfo, theme: ChalkInstance): string {
  const width = Math.max(...info.tokens.map((t) => t.token.length));
  const ca = info.ca_file === undefined ? '' : ` SVC_CA_FILE=${shellWord(info.ca_file)}`;
  return [
    `${theme.bold('sandbox')} listening on ${info.base_url} (archive storage on ${info.storage_origin})`,
    ...(info.ca_file === undefined ? [] : [`CA certificate ${info.ca_file} (trust it with --ca-file or SVC_CA_FILE; curl --cacert)`]),
    '',
    `organization  ${info.org}`,
    `owner token   ${info.token}`,
    '',
    'tokens:',
    ...info.tokens.map((t) => `  ${t.token.padEnd(width)}  ${t.label} (user ${t.user})`),
    '',
    'use it from another terminal:',
    `  export SVC_BASE_URL=${info.base_url} SVC_ORG=${info.org} SVC_TOKEN=${info.token}${ca}`,
    '  svc-migrate start Hello-World widgets --lock',
    '',
    'admin calls: docs/sandbox.md (move the clock, inject faults). Ctrl-C stops it.',
  ].join('\n');
}
