import { describe, expect, it } from 'vitest';
import { ArchiveVerificationError, type VerifyReport } from '../../src/core/archive/verify.js';
import { Output } from '../../src/ui/output.js';

function recorder() {
  const writes: string[] = [];
  return { writes, stream: { write: (text: string) => writes.push(text) > 0 } };
}

function output(json: boolean) {
  const stdout = recorder();
  const out = new Output({ json, quiet: false, color: false, stdout: stdout.stream, stderr: recorder().stream });
  return { out, writes: stdout.writes };
}

describe('Output.together', () => {
  it('sends the lines printed inside it with one write, in order, then writes as usual', () => {
    const { out, writes } = output(true);
    out.together(() => {
      out.line({ n: 1 }, () => 'one');
      out.line({ n: 2 }, () => 'two');
    });
    out.line({ n: 3 }, () => 'three');
    expect(writes).toEqual(['{"n":1}\n{"n":2}\n', '{"n":3}\n']);
  });

  it('still writes what was printed when the callback throws, and writes nothing for an empty burst', () => {
    const { out, writes } = output(false);
    out.together(() => {});
    expect(() =>
      out.together(() => {
        out.line({}, () => 'before the failure');
        throw new Error('boom');
      }),
    ).toThrow('boom');
    out.line({}, () => 'after');
    expect(writes).toEqual(['before the failure\n', 'after\n']);
  });

  it('joins lines only up to a size: a burst of large lines goes out whole, each in order', () => {
    const { out, writes } = output(false);
    const large = 'x'.repeat(700 * 1024);
    out.together(() => {
      out.line({}, () => 'small');
      out.line({}, () => large);
      out.line({}, () => large);
      out.line({}, () => 'last');
    });
    expect(writes.join('')).toBe(`small\n${large}\n${large}\nlast\n`);
    expect(Math.max(...writes.map((text) => text.length))).toBeLessThanOrEqual(1024 * 1024);
  });
});

describe('Output.lineOf', () => {
  it('builds the JSON form only with --json, and the human form only without', () => {
    const built: string[] = [];
    const json = () => (built.push('json'), { n: 1 });
    const human = () => (built.push('human'), 'one');
    const scripted = output(true);
    scripted.out.lineOf(json, human);
    const person = output(false);
    person.out.lineOf(json, human);
    expect([scripted.writes, person.writes, built]).toEqual([['{"n":1}\n'], ['one\n'], ['json', 'human']]);
  });
});

describe('JSON output', () => {
  it('writes DEL, C1 and bidi controls as escapes, in results and lines alike, and reads back the same values', () => {
    const value = { name: 'a\u009b2Jb\u007f\u202e', nested: ['\u0085', 'line\nbreak'] };
    const { out, writes } = output(true);
    out.result(value, () => '');
    out.line(value, () => '');
    for (const text of writes) {
      expect(text).not.toMatch(/[\u007f-\u009f\u202a-\u202e]/);
      expect(JSON.parse(text)).toEqual(value);
    }
    expect(writes[1]).toBe('{"name":"a\\u009b2Jb\\u007f\\u202e","nested":["\\u0085","line\\nbreak"]}\n');
  });

  it('writes a soft hyphen and the tag characters as escapes too, a pair of \\u escapes beyond U+FFFF, and reads back the same values', () => {
    const value = { name: 'wid\u00adgets\u{e0041}' };
    const { out, writes } = output(true);
    out.line(value, () => '');
    expect(writes[0]).toBe('{"name":"wid\\u00adgets\\udb40\\udc41"}\n');
    expect(JSON.parse(writes[0] as string)).toEqual(value);
  });
});

describe('Output and a progress bar', () => {
  it('clears the bar before any message, so the message starts its own line; the bar comes back at the next update', () => {
    const stderr = recorder();
    const tty = Object.assign(stderr.stream, { isTTY: true, columns: 80 });
    const out = new Output({ json: false, quiet: false, color: false, stdout: recorder().stream, stderr: tty });
    const bar = out.progress();
    bar.update({ received: 10, total: 100, resumedFrom: 0 });
    out.success('downloaded');
    out.warn('careful');
    bar.update({ received: 20, total: 100, resumedFrom: 0 });
    bar.done();
    out.info('after');
    const text = stderr.writes.join('');
    expect(text).toMatch(/B\/s\r\x1b\[2K✓ downloaded\nwarning: careful\n\r\x1b\[2K\[/);
    expect(text.endsWith('B/s\r\x1b[2Kafter\n')).toBe(true);
  });
});

describe('an archive that failed verification, as an error', () => {
  const report = {
    path: 'a.tar.gz',
    problems: [{ file: 'x\u001b]0;T\u0007y.json', message: 'has a control, line-separator or direction character in its name' }],
  } as unknown as VerifyReport;

  function printed(json: boolean): string {
    const stderr = recorder();
    const out = new Output({ json, quiet: false, color: false, stdout: recorder().stream, stderr: stderr.stream });
    out.error(new ArchiveVerificationError(report), { debug: false });
    return stderr.writes.join('');
  }

  it('names the first problem escaped once for a human, and as the archive has it for a script', () => {
    expect(printed(false)).toMatch(/^error: a\.tar\.gz failed verification: 1 problem \(first: x\\x1b\]0;T\\x07y\.json: has a control/);
    const { error } = JSON.parse(printed(true)) as { error: { message: string } };
    expect(error.message).toContain('(first: x\u001b]0;T\u0007y.json:');
  });
});

describe('--debug trace', () => {
  it('keeps its lines, and shows what a server put in its headers inert', () => {
    const stderr = recorder();
    const out = new Output({ json: false, quiet: false, color: false, stdout: recorder().stream, stderr: stderr.stream });
    out.trace('← 200 GET https://api.example.com/x (3 ms)\n    etag: "a\u009b2J"\n    link: <https://x/?a=\u001b]0;T\u0007>');
    expect(stderr.writes.join('')).toBe('← 200 GET https://api.example.com/x (3 ms)\n    etag: "a\\x9b2J"\n    link: <https://x/?a=\\x1b]0;T\\x07>\n');
  });
});
