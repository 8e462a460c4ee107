type LinkRel = 'next' | 'prev' | 'first' | 'last';
export type Links = Partial<Record<LinkRel, string>>;

/** Parses an RFC 8288 `Link` header such as `<https://x/?page=2>; rel="next", <…>; rel="last"`. */
export function parseLinkHeader(header: string | undefined | null): Links {
  const links: Links = {};
  if (!header) return links;
  for (const part of header.split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (!match) continue;
    const [, url, params] = match;
    const rel = /(?:^|;)\s*rel\s*=\s*"?([^";]+)"?/i.exec(params ?? '');
    if (!url || !rel?.[1]) continue;
    for (const name of rel[1].trim().split(/\s+/)) {
      if (name === 'next' || name === 'prev' || name === 'first' || name === 'last') {
        links[name] = url;
      }
    }
  }
  return links;
}

const MAX_PER_PAGE = 100;

export interface ClampResult {
  perPage: number;
  /** Set when the asked value was out of range and was changed. */
  notice?: string;
}

/** docs/service.md#limits: `per_page` is 1..100. */
export function clampPerPage(asked: number | undefined): ClampResult {
  if (asked === undefined) return { perPage: MAX_PER_PAGE };
  if (!Number.isInteger(asked)) {
    return { perPage: MAX_PER_PAGE, notice: `per_page ${asked} is not a whole number; using ${MAX_PER_PAGE}` };
  }
  if (asked < 1) return { perPage: 1, notice: `per_page ${asked} is below 1; using 1` };
  if (asked > MAX_PER_PAGE) {
    return {
      perPage: MAX_PER_PAGE,
      notice: `per_page ${asked} is above the service's maximum; using ${MAX_PER_PAGE}`,
    };
  }
  return { perPage: asked };
}
