import type { Spinner } from '../../ui/decorations.js';
import type { Output } from '../../ui/output.js';

/**
 * What a terminal shows while an archive is checked (verify, extract, restore): the bytes read,
 * then git's check repository by repository, which on an archive of hundreds takes longer than
 * the reading. Off a terminal both are silent.
 */
export function archiveReading(out: Output): {
  onProgress: (received: number, total: number) => void;
  onGitProgress: (progress: { checked: number; total: number }) => void;
  done: () => Promise<void>;
} {
  const bar = out.progress();
  let spinner: Promise<Spinner> | undefined;
  let ended = false;
  return {
    onProgress: (received, total) => bar.update({ received, total, resumedFrom: 0 }),
    onGitProgress: ({ checked, total }) => {
      if (total === 0 || ended) return;
      const text = `git checked ${checked}/${total} repositor${total === 1 ? 'y' : 'ies'}`;
      if (!spinner) {
        bar.done();
        spinner = out.spinner(text);
      }
      void spinner.then((drawn) => drawn.text(text));
    },
    done: async () => {
      ended = true;
      bar.done();
      (await spinner)?.stop();
    },
  };
}
