import { inertText } from '../../../support/outside-text.js';

// Every page of the site: UTF-8, a strict Content-Security-Policy (the site's own stylesheet and
// script, its own images, nothing else: file:// has no origin, and 'self' covers the site's files),
// no referrer, and, when the archive was read without verification, a banner saying so. Every text
// of the archive goes through `text()`: HTML-escaped, control, bidi and zero-width characters shown
// as escapes (support/outside-text.ts).

export const CONTENT_SECURITY_POLICY = 'default-src \'none\'; script-src \'self\'; style-src \'self\'; img-src \'self\'; base-uri \'none\'; form-action \'none\'';

const NOT_VERIFIED = 'this archive was NOT verified: it was read with --no-verify, and what it holds may be damaged or not what the service wrote';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** Text from the archive, safe in an element or an attribute. */
export function text(value: string | undefined | null): string {
  return escapeHtml(inertText(value ?? ''));
}

/** The path from a page `depth` directories below DIR back to DIR. */
function up(depth: number): string {
  return '../'.repeat(depth);
}

/** A path of the site, each part encoded, relative to a page `depth` below DIR. */
/** What the site keeps at its top for itself: an owner of one of these names (any case) goes beside it. */
const SITE_OWN = new Set(['assets', 'files', 'index.html']);

/**
 * The directories of a repository's pages, `<owner>/<repo>`: an owner named as the site's own
 * `assets/` or `files/` is `<owner>~` (`~` is in no name of the service's), so nothing collides.
 */
export function repositoryDir(name: string): [string, string] {
  const [owner = '', repo = ''] = name.split('/');
  return [SITE_OWN.has(owner.toLowerCase()) ? `${owner}~` : owner, repo];
}

export function sitePath(depth: number, ...parts: string[]): string {
  return up(depth) + parts.map((part) => encodeURIComponent(part)).join('/');
}

export interface PageFrame {
  title: string;
  depth: number;
  verified: boolean;
  /** Links above the title: [label, href] from the top down, the last one the page's own place. */
  trail: [string, string][];
  /** The list pages load the filter script; no other page runs any. */
  script?: boolean;
}

export function page(frame: PageFrame, body: string): string {
  const trail = frame.trail.map(([label, href]) => `<a href="${escapeHtml(href)}">${text(label)}</a>`).join(' / ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${text(frame.title)}</title>
<link rel="stylesheet" href="${up(frame.depth)}assets/site.css">
${frame.script ? `<script src="${up(frame.depth)}assets/site.js" defer></script>\n` : ''}</head>
<body>
${frame.verified ? '' : `<p class="banner" role="alert">${escapeHtml(NOT_VERIFIED)}</p>\n`}<nav class="trail">${trail}</nav>
<main>
${body}
</main>
</body>
</html>
`;
}

/** A date of the archive as the reader sees it: `2024-07-13 01:00 UTC`, or what the archive wrote when it is no date. */
export function date(value: string | undefined | null): string {
  if (!value) return '';
  const parsed = new Date(value);
  if (Number.isNaN(parsed.getTime())) return text(value);
  return `<time datetime="${escapeHtml(parsed.toISOString())}">${parsed.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** A label as a chip coloured by the stylesheet's class for its colour (no style attribute: the policy blocks it). */
export function labelChip(name: string, color: string | undefined): string {
  return `<span class="label${color ? ` c-${color}` : ''}">${text(name)}</span>`;
}
