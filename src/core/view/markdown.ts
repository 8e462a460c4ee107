import MarkdownIt from 'markdown-it';
import type StateCore from 'markdown-it/lib/rules_core/state_core.mjs';
import type StateInline from 'markdown-it/lib/rules_inline/state_inline.mjs';
import type Token from 'markdown-it/lib/token.mjs';
import { inertBody } from '../../support/outside-text.js';

// Bodies from the archive are Markdown as people wrote it: rendered by markdown-it with raw HTML
// off, so `<script>` is text. Links are the page's to decide (`LinkEnv`): http(s) and mailto stay,
// URLs of records and attachments in the archive become links within the site, and anything else
// (javascript:, data:, file:, a relative path into nowhere) is shown as its text. Nothing rendered
// carries a style attribute: the pages' Content-Security-Policy allows only the site's stylesheet.

/** What a page resolves a link from the archive to: an href relative to it, or undefined (shown as text). */
export interface LinkEnv {
  link(href: string): { href: string; local: boolean } | undefined;
  /** `#123`: the page of that issue or pull request of the same repository, if the archive holds it. */
  reference(number: number): string | undefined;
}

/** What markdown-it may let through to the renderer at all; the page decides the rest. */
const ALLOWED = /^(?:https?:|mailto:|tarball:\/\/root\/|#)/i;

const markdown = new MarkdownIt({ html: false, linkify: true });
markdown.validateLink = (url) => ALLOWED.test(url.trim());
markdown.inline.ruler.push('issue_reference', issueReference);
markdown.core.ruler.push('site_links', siteLinks);

export function renderMarkdown(source: string, env: LinkEnv): string {
  return markdown.render(inertBody(source), env);
}

/** `#123` after a space or punctuation, not in a link: a link to its page when the archive holds it. */
function issueReference(state: StateInline, silent: boolean): boolean {
  const at = state.pos;
  if (state.src.charCodeAt(at) !== 0x23 || (state as StateInline & { linkLevel: number }).linkLevel > 0) return false;
  const before = at > 0 ? state.src[at - 1] ?? '' : '';
  if (/[\p{L}\p{N}_&/]/u.test(before)) return false;
  const match = /^#([1-9]\d{0,8})(?![\p{L}\p{N}_])/u.exec(state.src.slice(at, at + 12));
  if (!match) return false;
  const href = (state.env as LinkEnv).reference(Number(match[1]));
  if (href === undefined) return false;
  if (!silent) {
    const open = state.push('link_open', 'a', 1);
    open.attrs = [['href', href]];
    open.meta = { site: true };
    state.push('text', '', 0).content = match[0];
    state.push('link_close', 'a', -1);
  }
  state.pos += match[0].length;
  return true;
}

/** Each link and image of the archive's text resolved by the page, or turned into text. */
function siteLinks(state: StateCore): void {
  const env = state.env as LinkEnv;
  for (const block of state.tokens) {
    alignByClass(block);
    if (block.type !== 'inline' || !block.children) continue;
    const out: Token[] = [];
    /** For each link open: whether it was kept, so its close goes the same way. */
    const open: boolean[] = [];
    for (const token of block.children) {
      if (token.type === 'link_open') {
        const site = (token.meta as { site?: boolean } | null)?.site === true;
        const target = site ? undefined : env.link(token.attrGet('href') ?? '');
        const kept = site || target !== undefined;
        if (target) token.attrSet('href', target.href);
        if (kept && !site && !target?.local) token.attrSet('rel', 'noopener noreferrer');
        open.push(kept);
        if (kept) out.push(token);
      } else if (token.type === 'link_close') {
        if (open.pop()) out.push(token);
      } else if (token.type === 'image') {
        out.push(...image(token, env, state));
      } else {
        out.push(token);
      }
    }
    block.children = out;
  }
}

/** An image of a file in the archive is shown; any other becomes a link to it (the page loads nothing from elsewhere). */
function image(token: Token, env: LinkEnv, state: StateCore): Token[] {
  const target = env.link(token.attrGet('src') ?? '');
  const alt = token.children?.map((child) => child.content).join('') ?? token.content;
  // A copy named inert (a drawing, which can carry a script) is linked, not shown.
  if (target?.local && !target.href.endsWith('.txt')) {
    token.attrSet('src', target.href);
    return [token];
  }
  const text = new state.Token('text', '', 0);
  text.content = alt === '' ? token.attrGet('src') ?? '' : alt;
  if (!target) return [text];
  const open = new state.Token('link_open', 'a', 1);
  open.attrs = [['href', target.href], ['rel', 'noopener noreferrer']];
  return [open, text, new state.Token('link_close', 'a', -1)];
}

/** markdown-it aligns table cells with a style attribute, which the policy blocks: a class instead. */
function alignByClass(token: Token): void {
  if (token.type !== 'th_open' && token.type !== 'td_open') return;
  const style = token.attrGet('style');
  if (style === null) return;
  token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
  const align = /text-align:(left|right|center)/.exec(style)?.[1];
  if (align) token.attrSet('class', `align-${align}`);
}
