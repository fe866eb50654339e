/**
 * xml_query pages -> COPY text format (spec "Output page shapes", xml_query): an XML declaration (UTF-8),
 * root element `result`, one `row` element per row, inside it one `field` element per column with the
 * attribute `name` and the value as text content. Parsed with saxes as the chunks arrive; entities and
 * CDATA are decoded by saxes. Column order is the field order of the first row; a missing field is NULL,
 * a field name the first row did not have is a PageFormatError.
 *
 * Empty text is loaded as NULL (\N): the spec gives empty text for "empty values" and no way to tell an
 * empty string from a null in XML, so both arrive as NULL.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { StringDecoder } from 'node:string_decoder';
import type { PageDecoder } from './decoder.ts';
import { CopyOutput, LF, TAB } from './copy-text.ts';
import { writeEscapedString } from './copy-text.ts';
import { PageFormatError } from './errors.ts';
import { KIND, classifyNumber, isIsoTimestampWithOffset } from './kinds.ts';

/** Where the parser is between tags. */
type Place = 'document' | 'result' | 'row' | 'field' | 'after';

/**
 * Whether b[s..e) is a number as a server writes one: `-?(0|[1-9][0-9]*)(.[0-9]+)?`. XML carries every value as
 * text, so a code like "0100" or "+41" must stay text: a numeric type would lose its leading zero or sign.
 */
function isCanonicalNumber(b: Uint8Array, s: number, e: number): boolean {
  let i = s;
  if (b[i] === 0x2d) i++;
  if (i >= e || b[i] === 0x2e) return false;
  if (b[i] === 0x30 && i + 1 < e && b[i + 1] !== 0x2e) return false;
  return true;
}

/** Kind of a non-empty value already written as COPY bytes at b[s..e): integer, numeric, timestamp, text. */
function classifyWritten(b: Uint8Array, s: number, e: number): number {
  const c = b[s]!;
  if ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e) {
    const k = isCanonicalNumber(b, s, e) ? classifyNumber(b, s, e) : 0;
    if (k !== 0) return k;
    if (isIsoTimestampWithOffset(b, s, e)) return KIND.timestamp;
  }
  return KIND.text;
}

/** The xml_query decoder; see the file comment. Made by makePageDecoder('xml_query'). */
export class XmlQueryPageDecoder implements PageDecoder {
  readonly outputType = 'xml_query' as const;
  readonly copyFormat = 'text' as const;
  columns: string[] | undefined = undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  private index = new Map<string, number>();
  private readonly out = new CopyOutput();

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number): AsyncGenerator<Buffer> {
    const out = this.out;
    let place: Place = 'document';
    let row = 0;
    let column = -1;
    let text = '';
    let values: (string | undefined)[] = [];
    let firstNames: string[] | undefined;
    const parser = new SaxesParser({ xmlns: false, position: true });
    const failure = (what: string): PageFormatError =>
      new PageFormatError(`XML: ${what} (line ${parser.line}, column ${parser.column})`, {
        page,
        row: place === 'row' || place === 'field' ? row + 1 : undefined,
      });
    parser.on('error', (err) => {
      throw failure(err.message);
    });
    parser.on('opentag', (tag: SaxesTagPlain) => {
      if (place === 'row' && tag.name === 'field') {
        const name = tag.attributes.name;
        if (typeof name !== 'string') throw failure('a field element without a name attribute');
        if (firstNames !== undefined) {
          if (firstNames.includes(name)) throw failure(`field ${JSON.stringify(name)} appears twice in the first row`);
          firstNames.push(name);
          column = firstNames.length - 1;
        } else {
          const col = this.index.get(name);
          if (col === undefined) throw failure(`field ${JSON.stringify(name)} is not among the first row's columns`);
          if (values[col] !== undefined) throw failure(`field ${JSON.stringify(name)} appears twice in a row`);
          column = col;
        }
        text = '';
        place = 'field';
      } else if (place === 'result' && tag.name === 'row') {
        place = 'row';
        if (this.columns === undefined) firstNames = [];
        values = this.columns === undefined ? [] : new Array<string | undefined>(this.columns.length);
      } else if (place === 'document' && tag.name === 'result') {
        place = 'result';
      } else {
        throw failure(`unexpected element <${tag.name}> in ${place === 'document' ? 'the document' : `<${place}>`}`);
      }
    });
    const onText = (t: string): void => {
      if (place === 'field') text += t;
      else if (t.trim() !== '') throw failure(`text outside a field: ${JSON.stringify(t.slice(0, 40))}`);
    };
    parser.on('text', onText);
    parser.on('cdata', onText);
    parser.on('closetag', (tag: SaxesTagPlain) => {
      if (place === 'field') {
        if (text.includes('\0')) throw failure('NUL character in a value: PostgreSQL text cannot hold it');
        values[column] = text;
        place = 'row';
      } else if (place === 'row') {
        if (firstNames !== undefined) {
          if (firstNames.length === 0) throw failure('the first row has no fields');
          this.columns = firstNames;
          this.kinds = firstNames.map(() => 0);
          this.index = new Map(firstNames.map((n, k) => [n, k]));
          firstNames = undefined;
        }
        this.writeRow(values);
        row++;
        this.rows++;
        place = 'result';
      } else if (place === 'result') {
        place = 'after';
      } else {
        throw failure(`unexpected closing tag </${tag.name}>`);
      }
    });

    const decoder = new StringDecoder('utf8');
    let first = true;
    for await (const chunk of body) {
      let s = decoder.write(chunk as Buffer);
      if (first && s.length > 0) {
        if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
        first = false;
      }
      parser.write(s);
      const rows = out.take();
      if (rows !== undefined) yield rows;
    }
    parser.write(decoder.end());
    parser.close();
    if ((place as Place) !== 'after') throw failure(place === 'document' ? 'no <result> element' : 'the document ends inside an element');
    const rows = out.take();
    if (rows !== undefined) yield rows;
  }

  /** Writes one row's values in column order; empty and missing -> \N. */
  private writeRow(values: (string | undefined)[]): void {
    const out = this.out;
    const ncols = this.columns!.length;
    const inspect = this.inspect;
    for (let col = 0; col < ncols; col++) {
      out.reserve(3);
      if (col > 0) out.buf[out.pos++] = TAB;
      const v = values[col];
      if (v === undefined || v === '') {
        out.writeNull();
        continue;
      }
      const s = out.pos;
      writeEscapedString(out, v);
      if (inspect) this.kinds[col]! |= classifyWritten(out.buf, out.pos - (out.pos - s), out.pos);
    }
    out.reserve(1);
    out.buf[out.pos++] = LF;
  }
}
