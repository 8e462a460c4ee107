import { watch } from 'node:fs';

/**
 * Resolves once `ready()` holds, looked at now and again at each change fs.watch reports in `dir`
 * (a name added, removed or written): a wait on the file system's events, not on a timer. With
 * `signal`, aborting it stops the watch (and rejects).
 */
export function untilInDirectory(dir: string, ready: () => boolean, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dir, signal ? { signal } : {});
    const look = () => {
      if (!ready()) return;
      watcher.close();
      resolve();
    };
    watcher.on('change', look).on('error', (error) => {
      watcher.close();
      reject(error);
    });
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    look();
  });
}
