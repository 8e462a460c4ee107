import { crc32, deflateSync } from 'node:zlib';
import { after, issueUrl, numbersOf, person, pullUrl, type RepoContext, uuidOf } from './numbering.js';

// Files people attached: an image in the first issue's body, a log in its first comment, an image
// in the first review of the first pull request. Each is a record of attachments_*.json whose
// `url` is the address the body links to, and whose `asset_url` names the archive's copy,
// `tarball://root/attachments/<uuid>/<name>`, as GitHub's archives do.

export interface ArchivedFile {
  /** The member's path in the archive. */
  path: string;
  data: Buffer;
}

export interface Attachment extends ArchivedFile {
  record: Record<string, unknown>;
}

/** A PNG of one pixel: small, and an image any viewer shows. */
function png(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  // Width 1, height 1, 8 bits, true colour; one row: filter 0 and a pixel.
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
  const pixel = deflateSync(Buffer.from([0, 0x24, 0x29, 0x2e]));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', pixel), chunk('IEND', Buffer.alloc(0))]);
}

export const PNG = png();

/** The first number of a kind, if the repository has one (1 and 3 unless the seed says otherwise). */
function firstNumber(ctx: RepoContext, kind: 'issue' | 'pull'): number | undefined {
  for (const numbered of numbersOf(ctx)) if (numbered.kind === kind) return numbered.number;
  return undefined;
}

type Parent = 'issue' | 'issue_comment' | 'pull_request_review';

interface Planned {
  parent: Parent;
  parentUrl: string;
  name: string;
  contentType: string;
  data: Buffer;
  number: number;
  /** Who wrote what it is attached to, and when (minutes after the number was opened). */
  user: string;
  minutes: number;
}

/** The url a body links to for each planned attachment: the same whether the archive holds it or not. */
export function attachmentUrl(ctx: RepoContext, name: string): string {
  return `${ctx.web}/user-attachments/assets/${uuidOf(`${ctx.repo.full_name}/${name}`)}`;
}

/** The id of the first comment on a number, and of its first review: the parents of attachments. */
export const commentId = (number: number, which: number) => number * 100 + which + 1;
export const reviewId = (number: number, which: number) => number * 100 + 50 + which;

function planned(ctx: RepoContext): Planned[] {
  const plans: Planned[] = [];
  const issue = firstNumber(ctx, 'issue');
  if (issue !== undefined) {
    const url = issueUrl(ctx, issue);
    plans.push({ parent: 'issue', parentUrl: url, name: 'screenshot.png', contentType: 'image/png', data: PNG, number: issue, user: person(ctx, issue).url, minutes: 0 });
    const log = `export of ${ctx.repo.full_name}\nstate: exported\nnames: café 日本語 🎉\n`;
    plans.push({ parent: 'issue_comment', parentUrl: `${url}#issuecomment-${commentId(issue, 0)}`, name: 'build-log.txt', contentType: 'text/plain', data: Buffer.from(log), number: issue, user: person(ctx, issue + 1).url, minutes: 10 });
  }
  const pull = firstNumber(ctx, 'pull');
  if (pull !== undefined) {
    const parentUrl = `${pullUrl(ctx, pull)}/files#pullrequestreview-${reviewId(pull, 0)}`;
    plans.push({ parent: 'pull_request_review', parentUrl, name: 'review.png', contentType: 'image/png', data: PNG, number: pull, user: person(ctx, pull + 1).url, minutes: 30 });
  }
  return plans;
}

export function attachmentsOf(ctx: RepoContext): Attachment[] {
  return planned(ctx).map((plan) => {
    const uuid = uuidOf(`${ctx.repo.full_name}/${plan.name}`);
    const path = `attachments/${uuid}/${plan.name}`;
    return {
      path,
      data: plan.data,
      record: {
        type: 'attachment',
        url: attachmentUrl(ctx, plan.name),
        [plan.parent]: plan.parentUrl,
        user: plan.user,
        asset_name: plan.name,
        asset_content_type: plan.contentType,
        asset_url: `tarball://root/${path}`,
        created_at: after(ctx, plan.number, plan.minutes),
      },
    };
  });
}
