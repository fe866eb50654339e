/** bomLength (src/pages/bom.ts) and the byte-level classifiers (src/pages/kinds.ts). */
import { describe, expect, it } from 'vitest';
import { bomLength } from '../src/pages/decoder.ts';
import {
  KIND,
  classifyBare,
  classifyIsoText,
  classifyNumber,
  isIsoTimestampWithOffset,
  isTxtTimestamp,
} from '../src/pages/kinds.ts';
import { inferColumnType } from '../src/warehouse/column-types.ts';

const b = (s: string): Buffer => Buffer.from(s);
const num = (s: string): number => classifyNumber(b(s), 0, Buffer.byteLength(s));

describe('bomLength', () => {
  it('finds the longest BOM first and 0 otherwise', () => {
    expect(bomLength(Buffer.from([0xef, 0xbb, 0xbf, 0x41]))).toBe(3);
    expect(bomLength(Buffer.from([0xfe, 0xff, 0x41]))).toBe(2);
    expect(bomLength(Buffer.from([0xff, 0xfe, 0x41, 0x00]))).toBe(2);
    expect(bomLength(Buffer.from([0xff, 0xfe, 0x00, 0x00]))).toBe(4);
    expect(bomLength(Buffer.from([0x00, 0x00, 0xfe, 0xff]))).toBe(4);
    expect(bomLength(Buffer.from([0x00, 0x00, 0xfe]))).toBe(0);
    expect(bomLength(Buffer.from([0xef, 0xbb]))).toBe(0);
    expect(bomLength(b('"a"'))).toBe(0);
    expect(bomLength(new Uint8Array(0))).toBe(0);
  });
});

describe('classifiers', () => {
  it('tells integers that fit int64 from numerics', () => {
    expect(
      ['0', '-0', '42', '-17', '9007199254740993', '9223372036854775807', '-9223372036854775808', '007'].map(num),
    ).toEqual(Array(8).fill(KIND.integer));
    expect(
      [
        '9223372036854775808',
        '-9223372036854775809',
        '12345678901234567890',
        '0.10',
        '-12.50',
        '1e5',
        '2.5E-3',
        '.5',
      ].map(num),
    ).toEqual(Array(8).fill(KIND.numeric));
    expect(['', '-', 'abc', '1.2.3', '1e', '12a', '--1'].map(num)).toEqual(Array(7).fill(0));
  });

  it('recognises txt and ISO timestamps by their bytes', () => {
    const txt = (s: string): boolean => isTxtTimestamp(b(s), 0, s.length);
    expect(['01.02.2024 10:11:12.123', '31.12.1999 23:59:59', '01.02.2024 10:11:12.1'].map(txt)).toEqual([
      true,
      true,
      true,
    ]);
    expect(
      ['1.02.2024 10:11:12.123', '01.02.2024T10:11:12.123', '01.02.2024 10:11:12.', '2024-03-01T12:34:56Z'].map(txt),
    ).toEqual([false, false, false, false]);
    const iso = (s: string): boolean => isIsoTimestampWithOffset(b(s), 0, s.length);
    expect(
      [
        '2024-03-01T12:34:56.789+01:00',
        '2024-03-01T11:34:56Z',
        '2024-03-01T11:34Z',
        '2024-03-01 11:34:56.1-0500',
        '2024-03-01T11:34:56+02',
      ].map(iso),
    ).toEqual(Array(5).fill(true));
    expect(
      [
        '2024-03-01T12:34:56.789',
        '2024-03-01',
        '2024-03-01T12:34:56.789+1:00',
        'Bestellung 2024-03-01T',
        '2024-03-01T12:34:56.+01:00',
      ].map(iso),
    ).toEqual(Array(5).fill(false));
  });

  it('tells ISO dates and ISO timestamps without offset from other date styles', () => {
    const iso = (s: string): number => classifyIsoText(b(s), 0, s.length);
    expect(['2012-01-01', '2000-02-29', '0001-01-01', '9999-12-31'].map(iso)).toEqual(Array(4).fill(KIND.date));
    expect(
      [
        '2010-01-01T01:00:00',
        '2010-01-01 01:00:00',
        '2010-01-01T01:00',
        '2010-01-01T01:00:00.123456',
        '2010-01-01T23:59:59.5',
        '2024-03-01T12:34:56.789+01:00',
        '2024-03-01T11:34:56Z',
      ].map(iso),
    ).toEqual(Array(7).fill(KIND.timestamp));
    expect(
      [
        '2015/01/01 01:00:00',
        '01.02.2015',
        'Jun 12 1998',
        '2015-02-30',
        '1900-02-29',
        '0000-01-01',
        '2015-1-01',
        '2015-01-01T24:00:00',
        '2010-01-01T01:00:00.1234567',
        '2010-01-01T01:00:',
        '2010-01-01X01:00:00',
        '2012-01-01 and more',
        '20120101',
      ].map(iso),
    ).toEqual(Array(13).fill(KIND.text));
  });

  it('reads a bare txt field with a minus at the fifth byte as a number, a date or a timestamp', () => {
    const bare = (s: string): number => classifyBare(b(s), 0, s.length);
    expect(['1.5e-7', '2012-01-01', '2010-01-01 01:00:00', '2015/01/01'].map(bare)).toEqual([
      KIND.numeric,
      KIND.date,
      KIND.timestamp,
      KIND.text,
    ]);
  });

  it('infers date for a column of ISO dates, and text when dates and timestamps mix', () => {
    expect(inferColumnType(KIND.date)).toBe('date');
    expect(inferColumnType(KIND.timestamp)).toBe('timestamptz');
    expect(inferColumnType(KIND.date | KIND.timestamp)).toBe('text');
    expect(inferColumnType(KIND.date | KIND.text)).toBe('text');
  });
});
