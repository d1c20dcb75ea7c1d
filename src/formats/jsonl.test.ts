import { describe, expect, it } from 'vitest';
import type { Problem } from '../model/types.js';
import { readJsonlBuffer, splitConcatenated, writeJsonl, type JsonlItem } from './jsonl.js';

function read(data: Buffer | string) {
  const items: JsonlItem[] = [];
  const problems: Problem[] = [];
  const layout = readJsonlBuffer(data, { item: (i) => items.push(i), problem: (p) => problems.push(p) });
  return { items, problems, layout };
}

describe('JSONL reader', () => {
  it('reads one object per line', () => {
    const { items, problems, layout } = read('{"a":1}\n{"b":2}\n');
    expect(problems).toEqual([]);
    expect(items.map((i) => (i.kind === 'record' ? i.value : null))).toEqual([{ a: 1 }, { b: 2 }]);
    expect(layout.finalNewline).toBe(true);
  });

  it('recovers two objects written on one line', () => {
    const { items, problems } = read('{"a":1}\n{"b":"}{"}{"c":[1,{"d":2}]}\n{"e":3}\n');
    expect(problems).toEqual([{ line: 2, kind: 'multiple-objects', message: expect.stringContaining('line 2') }]);
    const records = items.filter((i) => i.kind === 'record');
    expect(records.map((r) => r.value)).toEqual([{ a: 1 }, { b: '}{' }, { c: [1, { d: 2 }] }, { e: 3 }]);
    expect(records.map((r) => r.sameLineAsPrevious)).toEqual([false, false, true, false]);
  });

  it('keeps every byte of a line holding several values: spacing, non-objects and trailing text go with the objects (issue 13)', () => {
    for (const [line, objects, others] of [
      ['{"a":1} {"b":2}', 2, 1],
      ['{"a":1}  ,{"b":2} trailing garbage', 2, 20],
      ['{"a":1}[1,2]{"b":2}', 2, 5],
      ['{"a":1}[2]', 1, 3],
      ['  {"a": 1}{"b":2}', 2, 2],
    ] as const) {
      const { items, problems } = read(`{"x":0}\n${line}\n{"y":1}\n`);
      const records = items.filter((i) => i.kind === 'record');
      expect(records.length).toBe(2 + objects);
      const rebuilt = writeJsonl(
        records.map((r) => ({ text: r.text ?? JSON.stringify(r.value), sameLineAsPrevious: r.sameLineAsPrevious })),
      );
      expect(rebuilt).toBe(`{"x":0}\n${line}\n{"y":1}\n`);
      expect(problems).toEqual([
        {
          line: 2,
          kind: 'multiple-objects',
          message: `line 2 holds ${objects + (line.includes('[') ? 1 : 0)} JSON values on one line; ${objects === 1 ? 'its object was read as a record' : `its ${objects} objects were read as separate records`}, and ${others} other character${others > 1 ? 's' : ''} (spacing, values that are not objects, other text) ${others > 1 ? 'were' : 'was'} kept as text; writing the session back reproduces the line byte for byte`,
        },
      ]);
    }
  });

  it('keeps the text of a record that JSON.stringify would not reproduce (spacing, escapes, duplicate keys, CR, BOM); not of the others', () => {
    const source = '\ufeff{"a":1}\n{ "a" : 1 }\n{"s":"\\u0041"}\n{"k":1,"k":2}\n{"n":1.0}\n{"c":1}\r\n{"plain":true}\n';
    const { items } = read(source);
    const records = items.filter((i) => i.kind === 'record');
    expect(records.map((r) => r.text)).toEqual([
      '\ufeff{"a":1}',
      '{ "a" : 1 }',
      '{"s":"\\u0041"}',
      '{"k":1,"k":2}',
      '{"n":1.0}',
      '{"c":1}\r',
      undefined,
    ]);
    expect(writeJsonl(records.map((r) => ({ text: r.text ?? JSON.stringify(r.value) })))).toBe(source);
  });

  it('with keepSourceText false, keeps only the text of a BOM or CR line and of lines that are not records', () => {
    const source =
      '\ufeff{"a":1}\n{ "a" : 1 }\n{"s":"\\u0041"}\n{"k":1,"k":2}\n{"n":1.0}\n{"c":1}\r\n{"plain":true}\nnot json\n';
    const items: JsonlItem[] = [];
    readJsonlBuffer(source, { item: (i) => items.push(i), problem: () => {} }, { keepSourceText: false });
    expect(items.map((i) => i.text)).toEqual([
      '\ufeff{"a":1}',
      undefined,
      undefined,
      undefined,
      undefined,
      '{"c":1}\r',
      undefined,
      'not json',
    ]);
    // The values are read the same either way.
    expect(items.map((i) => (i.kind === 'record' ? i.value : null))).toEqual(
      read(source).items.map((i) => (i.kind === 'record' ? i.value : null)),
    );
  });

  it('reports invalid JSON and keeps reading', () => {
    const { items, problems } = read('{"a":1}\n{"a":,}\n{"b":2}\n');
    expect(problems.map((p) => [p.line, p.kind])).toEqual([[2, 'invalid-json']]);
    expect(items.map((i) => i.kind)).toEqual(['record', 'bad', 'record']);
  });

  it('reports a truncated last line', () => {
    const { items, problems, layout } = read('{"a":1}\n{"b":"unfinished');
    expect(problems.map((p) => [p.line, p.kind])).toEqual([[2, 'truncated-line']]);
    expect(layout.finalNewline).toBe(false);
    expect(items[1]).toEqual({ kind: 'bad', line: 2, text: '{"b":"unfinished' });
  });

  it('reports values that are not objects', () => {
    const { problems } = read('[1,2]\n42\n"s"\nnull\n{"ok":true}\n');
    expect(problems.map((p) => [p.line, p.kind])).toEqual([
      [1, 'not-an-object'],
      [2, 'not-an-object'],
      [3, 'not-an-object'],
      [4, 'not-an-object'],
    ]);
  });

  it('reports invalid UTF-8 and still parses the line', () => {
    const bad = Buffer.concat([Buffer.from('{"t":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}\n')]);
    const { items, problems } = read(bad);
    expect(problems.map((p) => [p.line, p.kind])).toEqual([[1, 'invalid-utf8']]);
    expect(items[0]).toMatchObject({ kind: 'record', value: { t: 'a\ufffd\ufffdb' } });
  });

  it('handles CRLF, a BOM, blank lines and lines split across chunks', () => {
    const { items, problems, layout } = read('\ufeff{"a":1}\r\n\n{"b":2}\n\n');
    expect(problems).toEqual([]);
    expect(items).toMatchObject([{ value: { a: 1 } }, { value: { b: 2 }, blankLinesBefore: 1 }]);
    expect(layout.trailingBlankLines).toBe(1);
  });

  it('writes records back with their layout', () => {
    const text = '{"a":1}\n\n{"b":2}{"c":3}\n';
    const { items, layout } = read(text);
    const out = writeJsonl(
      items.map((i) => ({
        text: i.kind === 'record' ? JSON.stringify(i.value) : i.text,
        sameLineAsPrevious: i.kind === 'record' && i.sameLineAsPrevious,
        blankLinesBefore: i.blankLinesBefore,
      })),
      layout,
    );
    expect(out).toBe(text);
  });
});

describe('splitConcatenated', () => {
  it('ignores braces inside strings and escaped quotes', () => {
    expect(splitConcatenated('{"a":"x\\"}{"}{"b":1}')).toMatchObject({
      values: [{ a: 'x"}{' }, { b: 1 }],
      starts: [0, 13],
      ends: [13, 20],
      complete: true,
    });
  });
  it('says when the text ends inside a value', () => {
    expect(splitConcatenated('{"a":{"b":1}').complete).toBe(false);
    expect(splitConcatenated('{"a":"open').complete).toBe(false);
  });
});
