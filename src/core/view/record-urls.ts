import { isServiceName } from '../archive/service-names.js';
import type { ItemKind } from './model.js';

// Records name each other by URL (`https://host/owner/repo/issues/12`, `…/pull/3/files#…`): the
// repository and the issue or pull request a URL names, read only when its owner and name are names
// the service gives and its number a plain one, as those become paths of the site.

export interface RecordPlace {
  repository: string;
  item?: { kind: ItemKind; number: number };
}

const NUMBER = /^[1-9]\d{0,8}$/;

export function placeOf(url: unknown): RecordPlace | undefined {
  if (typeof url !== 'string' || url.length > 2048) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return undefined;
  const [owner, name, kind, number] = parsed.pathname.split('/').slice(1);
  if (!owner || !name || !isServiceName(owner) || !isServiceName(name)) return undefined;
  const repository = `${owner}/${name}`;
  if ((kind === 'issues' || kind === 'pull') && number !== undefined && NUMBER.test(number)) {
    return { repository, item: { kind: kind === 'pull' ? 'pull' : 'issue', number: Number(number) } };
  }
  return { repository };
}
