import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvCell, csvLine } from '../../../src/fleet/csv.ts';

/** A strict RFC 4180 reader of ONE CRLF-terminated line (throws on anything malformed). */
function readLine(line: string): string[] {
  expect(line.endsWith('\r\n')).toBe(true);
  const body = line.slice(0, -2);
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    let cell = '';
    if (body[i] === '"') {
      i++;
      for (;;) {
        if (i >= body.length) throw new Error('unterminated quote');
        if (body[i] === '"') {
          if (body[i + 1] === '"') {
            cell += '"';
            i += 2;
          } else {
            i++;
            break;
          }
        } else cell += body[i++];
      }
    } else {
      while (i < body.length && body[i] !== ',') {
        if (/["\r\n]/.test(body[i]!)) throw new Error(`unquoted ${JSON.stringify(body[i])}`);
        cell += body[i++];
      }
    }
    cells.push(cell);
    if (i === body.length) return cells;
    if (body[i] !== ',') throw new Error(`expected a comma at ${i}`);
    i++;
  }
}

describe('csvCell', () => {
  it.each([
    ['=HYPERLINK("http://x","y")', `"'=HYPERLINK(""http://x"",""y"")"`],
    ['=1+1', `"'=1+1"`],
    ['+1', `"'+1"`],
    ['-cmd', `"'-cmd"`],
    ["-2+3+cmd|' /C calc'!A0", `"'-2+3+cmd|' /C calc'!A0"`],
    ['@SUM(A1:A9)', `"'@SUM(A1:A9)"`],
    ['\t=1', `"'\t=1"`],
    ['\r=1', `"'\r=1"`],
    ['\u0000=1', `"'\u0000=1"`],
    ['-', `"'-"`],
  ])('neutralises formula text %j as %s', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it.each([
    [-5, '-5'],
    [-0.25, '-0.25'],
    [0, '0'],
    [42, '42'],
    [1e21, '1e+21'],
    [-12n, '-12'],
  ])('writes the number %s as a number (%s), not as text', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('treats numbers that are text as text', () => {
    expect(csvCell('-5')).toBe(`"'-5"`);
    expect(csvCell('5')).toBe('5');
    expect(csvCell(-Infinity)).toBe(`"'-Infinity"`);
    expect(csvCell(Number.NaN)).toBe('NaN');
  });

  it.each([
    [null, ''],
    [undefined, ''],
    ['', ''],
    ['web_1', 'web_1'],
    [true, 'true'],
    [false, 'false'],
    ['say "hi"', '"say ""hi"""'],
    ['a,b', '"a,b"'],
    ['line1\nline2', '"line1\nline2"'],
    ['line1\r\nline2', '"line1\r\nline2"'],
    ['a\rb', '"a\rb"'],
    ['"', '""""'],
    ['mid=1', 'mid=1'],
    ['a-b', 'a-b'],
    [" 'x", " 'x"],
    ['2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
    [new Date(0), '1970-01-01T00:00:00.000Z'],
  ])('writes %j as %j', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('joins arrays with a space and neutralises the joined text', () => {
    expect(csvCell(['web_1', 'web_2'])).toBe('web_1 web_2');
    expect(csvCell([])).toBe('');
    expect(csvCell(['a', null, undefined, 'b'])).toBe('a   b');
    expect(csvCell(['=cmd', 'x'])).toBe(`"'=cmd x"`);
    expect(csvCell(['a,b', 'c"d'])).toBe('"a,b c""d"');
    expect(csvCell([-5, 3])).toBe(`"'-5 3"`);
  });
});

describe('csvLine', () => {
  it('writes one RFC 4180 line ending in CRLF', () => {
    expect(csvLine(['vmName', 'eventId', 'occurrence'])).toBe('vmName,eventId,occurrence\r\n');
    expect(csvLine(['web_1', '=HYPERLINK("http://x","y")', -5, null, ['a', 'b'], 'x\ny'])).toBe(
      `web_1,"'=HYPERLINK(""http://x"",""y"")",-5,,a b,"x\ny"\r\n`,
    );
    expect(csvLine([])).toBe('\r\n');
    expect(csvLine([null])).toBe('\r\n');
  });

  it('round-trips arbitrary text through a strict RFC 4180 reader; no cell starts as a formula (property)', () => {
    const cell = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc
        .constantFrom('=', '+', '-', '@', '\t', '\r', '\n', '"', ',', "'")
        .chain((c) => fc.string().map((s) => c + s)),
    );
    fc.assert(
      fc.property(fc.array(cell, { minLength: 1, maxLength: 6 }), (values) => {
        const read = readLine(csvLine(values));
        expect(read).toHaveLength(values.length);
        read.forEach((text, i) => {
          const original = values[i]!;
          expect(text).toBe(/^[=+\-@\t\r\0]/.test(original) ? `'${original}` : original);
          expect(text).not.toMatch(/^[=+\-@\t\r\0]/);
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('round-trips numbers unchanged (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { minLength: 1 }),
        (values) => {
          const read = readLine(csvLine(values));
          expect(read.map(Number)).toEqual(values.map((v) => (Object.is(v, -0) ? 0 : v)));
        },
      ),
    );
  });
});
