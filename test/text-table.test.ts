/**
 * The CLI's aligned tables (`runs`, `replay`, `preview`) line up by the columns a terminal shows, not by UTF-16 units:
 * a report's CJK names take two columns each, a combining accent none.
 */
import { expect, it } from 'vitest';
import { textTable } from '../src/cli/text-table.ts';
import { cell } from '../src/cli/preview.ts';

it('pads every cell but the last to the widest cell as a terminal shows it', () => {
  const lines = textTable(
    ['kunde', 'ort'],
    [
      ['日本商事', 'Tokyo'],
      ['Cafe\u0301 Zürich', 'Zürich'],
      ['ab', ''],
    ],
  );
  expect(lines).toEqual(['kunde        ort', '日本商事     Tokyo', 'Cafe\u0301 Zürich  Zürich', 'ab']);
});

it('cuts a long preview cell by characters, never inside an emoji', () => {
  const v = `${'a'.repeat(38)}😀😀 and more`;
  expect(cell(v)).toBe(`${'a'.repeat(38)}😀…`);
  expect(cell('line\nnext\tcol')).toBe('line⏎next→col');
  expect(cell(null)).toBe('NULL');
});
