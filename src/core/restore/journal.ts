import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { UsageError } from '../../errors.js';
import { fileError } from '../../support/system-errors.js';
import { replaceFile } from '../exclusive-files.js';

// What a restore has done, by target and repository, so a rerun (after kill -9, a lost network, a
// refused ref fixed on the host) goes on from there. It is believed for nothing: a repository it
// says is proved is proved again with ls-remote before it is skipped (run.ts).

type RepositoryState = 'proved';

interface RestoreJournal {
  version: 1;
  /** By template, then by repository (owner/repo). */
  targets: Record<string, Record<string, { state: RepositoryState; at: string }>>;
}

/** Some hundred bytes a repository, for every target of 10,000 repositories. */
const MAX_JOURNAL_BYTES = 16 << 20;

export class RestoreJournalFile {
  private readonly path: string;
  private readonly journal: RestoreJournal;
  private writing: Promise<void> = Promise.resolve();
  /** The write that will take the records made since the one under way began. */
  private next: Promise<void> | undefined;

  private constructor(path: string, journal: RestoreJournal) {
    this.path = path;
    this.journal = journal;
  }

  /**
   * The journal at `path`, or a new one when nothing is there. Anything else there is refused
   * (exit 2), never replaced: a link, a device, a FIFO, a directory, a file this program did not
   * write (the archive itself, given as --journal by mistake), one too large or unreadable.
   */
  static async open(path: string): Promise<RestoreJournalFile> {
    const refuse = (why: string) => new UsageError(`${path} ${why}`, { hint: 'move it away, or pass --journal with another path' });
    let text: string;
    try {
      const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      try {
        const stats = await handle.stat();
        if (!stats.isFile()) throw refuse('is not a regular file, so it is not a restore journal');
        if (stats.size > MAX_JOURNAL_BYTES) throw refuse(`is larger than a restore journal can be (${stats.size} bytes)`);
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return new RestoreJournalFile(path, { version: 1, targets: Object.create(null) as RestoreJournal['targets'] });
      if (code === 'ELOOP') throw refuse('is a symbolic link, so it is not a restore journal');
      if (error instanceof UsageError) throw error;
      throw fileError(error as NodeJS.ErrnoException, { action: 'read', path, role: 'the restore journal' });
    }
    let journal: unknown;
    try {
      journal = JSON.parse(text);
    } catch {
      journal = undefined;
    }
    if (!isJournal(journal)) throw refuse('is not a restore journal this program wrote');
    return new RestoreJournalFile(path, journal);
  }

  state(template: string, repository: string): RepositoryState | undefined {
    return Object.hasOwn(this.journal.targets, template) ? this.journal.targets[template]?.[repository]?.state : undefined;
  }

  /**
   * Records a repository's state. Writes follow one another, each replacing the file whole with
   * every state recorded so far; records made while one is written share the next. Not flushed to
   * the disk: a journal lost to a power cut costs a rerun only the pushes, each proved again.
   */
  async record(template: string, repository: string, state: RepositoryState, at: number): Promise<void> {
    const target = Object.hasOwn(this.journal.targets, template)
      ? (this.journal.targets[template] as Record<string, { state: RepositoryState; at: string }>)
      : (this.journal.targets[template] = Object.create(null) as Record<string, { state: RepositoryState; at: string }>);
    target[repository] = { state, at: new Date(at).toISOString() };
    this.next ??= this.writing.then(() => {
      this.next = undefined;
      return this.write();
    });
    this.writing = this.next;
    await this.writing;
  }

  /** Writes it as it is, before the first push: a path that cannot be written is said then, not after a push. */
  write(): Promise<void> {
    return replaceFile(this.path, `${JSON.stringify(this.journal, null, 1)}\n`, { mode: 0o600 }).catch((error: unknown) => {
      throw fileError(error as NodeJS.ErrnoException, { action: 'write', path: this.path, role: 'the restore journal', after: 'or pass --journal with a path you can write' });
    });
  }
}

function isJournal(value: unknown): value is RestoreJournal {
  if (typeof value !== 'object' || value === null) return false;
  const { version, targets } = value as Partial<RestoreJournal>;
  if (version !== 1 || typeof targets !== 'object' || targets === null || Array.isArray(targets)) return false;
  return Object.values(targets).every(
    (repositories) =>
      typeof repositories === 'object' &&
      repositories !== null &&
      Object.values(repositories).every((entry: unknown) => {
        const { state, at } = (entry ?? {}) as { state?: unknown; at?: unknown };
        return state === 'proved' && typeof at === 'string';
      }),
  );
}
