// The names the service gives owners and repositories: letters, digits, `.`, `_` and `-`, never `.`
// or `-` first. A name from an archive outside them is never made a path of the user's (extract) or
// put in a URL (restore): it could be `.ssh`, `.bashrc`, an option or another URL's part.

const SERVICE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

export function isServiceName(name: string): boolean {
  return name.length <= 255 && SERVICE_NAME.test(name);
}

/** `schema.json` and `<kind>_000001.json`: the only files the service's archives hold at their top. */
export function isMetadataFileName(name: string): boolean {
  return name === 'schema.json' || /^[a-z][a-z_]*_\d{6}\.json$/.test(name);
}
