import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { type InspectReport, inspectArchive } from '../../core/archive/inspect.js';
import { VerificationError } from '../../errors.js';
import { inspectMessage, inspectNotes } from '../../ui/archive.js';
import { examples } from '../common/options.js';

async function inspect(context: Context, file: string): Promise<InspectReport> {
  const bar = context.out.progress();
  let report: InspectReport;
  try {
    report = await inspectArchive(file, (received, total) => bar.update({ received, total, resumedFrom: 0 }));
  } finally {
    bar.done();
  }
  const { layout, json, theme } = context.out;
  // Off a terminal stdout is the table alone; what is said around it goes to stderr, as `export` does.
  const notes = layout.plain && !json ? inspectNotes(report, theme, true) : undefined;
  if (notes) context.out.info(notes.before);
  context.out.result(report, (data) => inspectMessage(data, theme, layout));
  if (notes) for (const line of notes.after) context.out.info(line);
  if (!report.complete) {
    throw new VerificationError(`${file} could not be read to its end`, { hint: `run \`svc-migrate archive verify ${file}\`` });
  }
  return report;
}

export function register(archive: Command, run: Runner): void {
  archive
    .command('inspect')
    .description('show what an archive holds: organization, repositories (refs, size) and metadata counts')
    .argument('<file>', 'the .tar.gz archive')
    .addHelpText(
      'after',
      examples([
        'svc-migrate archive inspect migration-4242.tar.gz',
        'svc-migrate archive inspect acme.tar.gz --json | jq .repositories',
      ]),
    )
    .action((file: string, _flags: unknown, cmd: Command) =>
      run(
        cmd,
        () => ({ file }),
        async (context, options) => {
          await inspect(context, options.file);
        },
      ),
    );
}
