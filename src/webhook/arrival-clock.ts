/** Arrival times: a burst of deliveries shares its millisecond, and formatting a date is not free. */
export function arrivalClock(): { iso(): string } {
  let last = Number.NaN;
  let text = '';
  return {
    iso() {
      const now = Date.now();
      if (now !== last) {
        last = now;
        text = new Date(now).toISOString();
      }
      return text;
    },
  };
}
