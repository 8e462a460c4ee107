/**
 * Conditions looked at again whenever something that can change them happens: the test calls
 * `changed()` from those events (a stream's data, a socket's close, a request handled), and
 * `until(ready)` resolves at the first look where `ready()` holds. No timer looks in between.
 */
export function changes(): { changed: () => void; until: (ready: () => boolean) => Promise<void> } {
  const looks = new Set<() => void>();
  return {
    changed: () => {
      for (const look of [...looks]) look();
    },
    until: (ready) =>
      new Promise((resolve) => {
        const look = () => {
          if (!ready()) return;
          looks.delete(look);
          resolve();
        };
        looks.add(look);
        look();
      }),
  };
}
