/** `1 repository`, `2 repositories`: a count and its noun, singular for exactly one (every layer words counts alike). */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
