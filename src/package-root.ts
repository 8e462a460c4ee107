/**
 * The package's own directory, where the files shipped beside the code live (package.json,
 * samples/). This module is compiled to dist/package-root.js and bundled into dist/cli.js
 * (scripts/bundle.js): one level below the root either way, so every module asks here rather than
 * counting `../` from where it happens to sit.
 */
export const PACKAGE_ROOT = new URL('../', import.meta.url);
