import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// No module of src/ reaches itself through its imports, types included: a circle makes the order
// modules load in matter, and layers that lean on each other (docs/architecture.md#layers).

const SRC = new URL('../../src/', import.meta.url).pathname;
const IMPORT = /^\s*(?:import|export)\b[^'";]*?from\s+'(\.{1,2}\/[^']+)'/gm;

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? modules(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => resolve(dirname(file), (match[1] as string).replace(/\.js$/, '.ts')));
}

describe('the import graph of src/', () => {
  it('has no circle', () => {
    const graph = new Map(modules(SRC).map((file) => [file, importsOf(file)]));
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        circles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(SRC, f)).join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    expect(circles).toEqual([]);
    // The check sees the imports: the program imports every command.
    expect(graph.get(join(SRC, 'program.ts'))?.length).toBeGreaterThan(10);
  });
});
