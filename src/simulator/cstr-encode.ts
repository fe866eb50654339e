/**
 * C/Java string literal coding of the txt_cstr and txt_allcstr pages (docs/report-export-service.md "Output types").
 */

/**
 * Codes `text` as the simulator and a C/Java server do: `\\ \" \n \r \t \b \f \v \a`, other control characters as
 * `\xHH` or `\0`, every non-ASCII UTF-16 code unit as `\uXXXX` (so emoji become surrogate pairs). The inverse of
 * pages/cstr.ts decodeCstr; used by the simulator's txt_cstr and txt_allcstr pages and the tests.
 */
export function encodeCstr(text: string): string {
  let out = '';
  for (let k = 0; k < text.length; k++) {
    const u = text.charCodeAt(k);
    switch (u) {
      case 0x5c:
        out += '\\\\';
        break;
      case 0x22:
        out += '\\"';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0d:
        out += '\\r';
        break;
      case 0x09:
        out += '\\t';
        break;
      case 0x08:
        out += '\\b';
        break;
      case 0x0c:
        out += '\\f';
        break;
      case 0x0b:
        out += '\\v';
        break;
      case 0x07:
        out += '\\a';
        break;
      case 0x00:
        out += '\\0';
        break;
      default:
        if (u < 0x20 || u === 0x7f) out += `\\x${u.toString(16).padStart(2, '0')}`;
        else if (u < 0x80) out += text[k];
        else out += `\\u${u.toString(16).toUpperCase().padStart(4, '0')}`;
    }
  }
  return out;
}
