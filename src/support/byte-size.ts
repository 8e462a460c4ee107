// Sizes as people read them, in binary units: the one formatting of a byte count, for ui/ and for
// the messages core/ writes. Like errors.ts, it imports nothing, so every layer may use it.

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `1536` → `1.5 KiB`; below 1 KiB, `512 B`. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}
