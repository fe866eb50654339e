/**
 * Report names (spec "Report naming rules"): checked before any request, then encoded as the single
 * {reportname} path segment of spec "Endpoints" #1.
 */
import { ReportNameError } from './errors.ts';

/** How sub folders are written in the encoded name: slash as %2F, or backslash as %5C for sanitizing servers. */
export type PathEncoding = 'slash' | 'backslash';

/** The extension appended when a report name has none (spec "Report naming rules": Extension). */
export const DEFAULT_REPORT_EXTENSION = 'avw';

const NAME_CHAR = /^[A-Za-z0-9_ ]$/;
const EXTENSION = /^[A-Za-z0-9]+$/;
const HOW_TO_FIX =
  'Report folder and file names may contain only A-Z a-z 0-9 _ and space, sub folders are separated by "/", ' +
  'and an optional extension (letters and digits) follows the last dot (spec "Report naming rules"). ' +
  'Fix report.name in jobs.yaml, or rename the report on the server.';

function describeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return cp < 0x20 || cp === 0x7f ? hex : `"${ch}" (${hex})`;
}

/**
 * Validates a report name and encodes it for the start-report path.
 *
 * `Sales/Orders` becomes `Sales%2FOrders.avw` (slash) or `Sales%5COrders.avw` (backslash); each folder and
 * the file name are `encodeURIComponent`ed (space -> %20); `.avw` is appended when the file name has no
 * extension, an explicit one (`Ledger.avx`) is kept.
 *
 * @param name report name as configured, sub folders separated by "/"
 * @param pathEncoding sub folder separator on the wire (connection.pathEncoding)
 * @param context names the jobs.yaml job in the error message
 * @returns the encoded {reportname} path segment
 * @throws ReportNameError naming the job, the bad character, its 1-based position and how to fix it
 */
export function encodeReportName(name: string, pathEncoding: PathEncoding, context: { job?: string } = {}): string {
  const where = context.job === undefined ? `report name "${name}"` : `job "${context.job}": report name "${name}"`;
  const fail = (problem: string, details: Record<string, unknown>): never => {
    throw new ReportNameError(`${where} ${problem}. ${HOW_TO_FIX}`, { job: context.job, reportName: name, ...details });
  };
  if (name.length === 0) fail('is empty', {});

  const segments = name.split('/');
  const fileSegment = segments[segments.length - 1]!;
  const lastDot = fileSegment.lastIndexOf('.');
  const fileBase = lastDot === -1 ? fileSegment : fileSegment.slice(0, lastDot);
  const extension = lastDot === -1 ? DEFAULT_REPORT_EXTENSION : fileSegment.slice(lastDot + 1);

  // Walk the name once by code point so positions match what a person counts.
  let position = 0;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const isFile = i === segments.length - 1;
    const checked = isFile ? fileBase : segment;
    if (checked.length === 0) {
      fail(
        isFile && segment.length > 0
          ? `has an empty file name before the extension`
          : `has an empty ${isFile ? 'file name' : 'folder name'} at position ${position + 1} (leading, trailing or doubled "/")`,
        { position: position + 1 },
      );
    }
    for (const ch of checked) {
      position++;
      if (!NAME_CHAR.test(ch)) {
        fail(`contains the character ${describeChar(ch)} at position ${position} (in ${isFile ? 'file name' : 'folder'} "${segment}"), which is not allowed`, {
          character: ch,
          position,
          segment,
        });
      }
    }
    if (isFile && lastDot !== -1) {
      position++; // the dot
      if (!EXTENSION.test(extension)) {
        const bad = [...extension].find((ch) => !/^[A-Za-z0-9]$/.test(ch));
        fail(
          bad === undefined
            ? `has an empty extension after the dot at position ${position}`
            : `has the character ${describeChar(bad)} in its extension "${extension}", which is not allowed`,
          { position, extension },
        );
      }
    }
    position++; // the "/" separator
  }

  const separator = pathEncoding === 'backslash' ? '%5C' : '%2F';
  const folders = segments.slice(0, -1).map(encodeURIComponent);
  return [...folders, encodeURIComponent(fileBase)].join(separator) + '.' + encodeURIComponent(extension);
}
