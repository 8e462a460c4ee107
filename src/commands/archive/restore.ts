export function register(_a: unknown, _r: unknown): void {}
