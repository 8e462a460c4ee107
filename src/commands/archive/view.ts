import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { UsageError } from '../../errors.js';
import { inertText } from '../../support/outside-text.js';
import { ArchiveVerificationError } from '../../core/archive/verify.js';
import type { ViewReport } from '../../core/view/site.js';
import { verifyMessage, viewMessage } from '../../ui/archive.js';
import { archiveReading } from '../common/archive-reading.js';
import { checkNotEmpty, examples, parsePort } from '../common/options.js';

interface ViewFlags {
  output?: string;
  force?: boolean;
  verify?: boolean;
  serve?: boolean;
  port?: number;
}

interface ViewOptions {
  file: string;
  dir: string;
  force: boolean;
  verify: boolean;
  /** With --serve: the port to serve the site on (0: any free one). */
  serve?: number;
}

function parseViewOptions(file: string, flags: ViewFlags): ViewOptions {
  // An empty DIR ("$UNSET") would be the current directory.
  checkNotEmpty(flags.output, '-o/--output', 'pass the directory to write the site to, e.g. -o acme-site/');
  if (flags.port !== undefined && flags.serve !== true) throw new UsageError('--port is the port of --serve', { hint: 'add --serve, or leave out --port' });
  const serve = flags.serve === true ? { serve: flags.port ?? 0 } : {};
  return { file, dir: flags.output as string, force: flags.force === true, verify: flags.verify !== false, ...serve };
}

async function view(context: Context, { file, dir, force, verify, serve }: ViewOptions): Promise<void> {
  const reading = archiveReading(context.out);
  // Loaded here: markdown-it and the pages cost every other command nothing.
  const { viewArchive } = await import('../../core/view/site.js');
  let report: ViewReport;
  try {
    report = await viewArchive(file, dir, {
      force, verify, signal: context.signal, onProgress: reading.onProgress, onGitProgress: reading.onGitProgress,
    });
  } catch (error) {
    await reading.done();
    if (error instanceof ArchiveVerificationError) context.out.result(error.report, (data) => verifyMessage(data, context.out.theme));
    throw error;
  }
  await reading.done();
  context.out.result(report, (data) => viewMessage(data, context.out.theme));
  if (serve === undefined) return;
  const { serveSite } = await import('../common/site-server.js');
  const server = await serveSite(dir, serve);
  context.out.line({ url: server.url }, (info) => `serving ${inertText(dir)} at ${info.url} (Ctrl-C stops)`);
  await new Promise<void>((resolve) => {
    if (context.signal.aborted) return resolve();
    context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.close();
  context.out.info('the site is no longer served');
}

export function register(archive: Command, run: Runner): void {
  archive
    .command('view')
    .description('write the issues, pull requests, reviews and releases of a verified archive as a static site that opens from disk (exit 9 if it fails: then nothing is written)')
    .argument('<file>', 'the .tar.gz archive')
    .requiredOption('-o, --output <dir>', 'a new or empty directory for the site')
    .option('--force', 'DIR may hold files: each file of the site replaces the same path there; nothing else is touched')
    .option('--serve', 'then serve the site on 127.0.0.1 and print its URL, until Ctrl-C')
    .option('--port <n>', 'the port of --serve (default: any free port)', parsePort)
    .option('--no-verify', 'read the archive without verifying it (no git check): every page then says it was NOT verified')
    .addHelpText('after', examples(['svc-migrate archive view migration-4242.tar.gz -o acme-site/', 'svc-migrate archive view acme.tar.gz -o site/ --json | jq ".repositories[] | {name, issues}"', 'svc-migrate archive view acme.tar.gz -o site/ --serve']))
    .action((file: string, flags: ViewFlags, cmd: Command) =>
      run(
        cmd,
        () => parseViewOptions(file, flags),
        async (context, options) => {
          await view(context, options);
        },
      ),
    );
}
