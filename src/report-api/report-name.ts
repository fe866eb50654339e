/**
 * Report names (docs/report-export-service.md "Report naming rules"): checked before any request, then encoded as
 * the single {reportname} path segment of "Endpoints" #1.
 */
import { ReportNameError } from './errors.ts';

/** Sub folders in the encoded name: slash as %2F (the default), or backslash as %5C for sanitizing servers. */
export const PATH_ENCODINGS = ['slash', 'backslash'] as const;
export type PathEncoding = (typeof PATH_ENCODINGS)[number];

/** A report's extensions; the first is appended when a name has none. */
const REPORT_EXTENSIONS = ['avw', 'avx'] as const;

const NAME_CHAR = /^[A-Za-z0-9_ ]$/;
const HOW_TO_FIX =
  'Report folder and file names may contain only A-Z a-z 0-9 _ and space, sub folders are separated by "/", ' +
  'and the extension is .avw (the default, may be left out) or .avx ' +
  '(docs/report-export-service.md "Report naming rules"). ' +
  'Fix report.name in jobs.yaml, or rename the report on the server.';

function describeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return cp < 0x20 || cp === 0x7f ? hex : `"${ch}" (${hex})`;
}

/**
 * What is wrong with a report name, e.g. `contains the character "é" (U+00E9) at position 10 (in file name "Ordérs"),
 * which is not allowed`; `details` holds position (1-based, in code points), character, segment, extension.
 */
interface ReportNameProblem {
  kind: 'character' | 'shape';
  problem: string;
  details: Record<string, unknown>;
  howToFix: string;
}

/** A report name split into folders, file name and extension (the default when none is written). */
type SplitName = { folders: string[]; file: string; extension: string };

/**
 * Checks a report name (sub folders separated by "/"), walking it by code point so that positions match what a
 * person counts. @returns the first problem, or the split name when it is valid
 */
export function checkReportName(name: string): ReportNameProblem | SplitName {
  const fail = (kind: ReportNameProblem['kind'], problem: string, details: Record<string, unknown>) =>
    ({ kind, problem, details, howToFix: HOW_TO_FIX }) as ReportNameProblem;
  if (name.length === 0) return fail('shape', 'is empty', {});
  const segments = name.split('/');
  const fileSegment = segments[segments.length - 1]!;
  const lastDot = fileSegment.lastIndexOf('.');
  const fileBase = lastDot === -1 ? fileSegment : fileSegment.slice(0, lastDot);
  const extension = lastDot === -1 ? REPORT_EXTENSIONS[0] : fileSegment.slice(lastDot + 1);
  let position = 0;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const isFile = i === segments.length - 1;
    const checked = isFile ? fileBase : segment;
    const what = isFile ? 'file name' : 'folder';
    if (checked.length === 0) {
      const where = `${isFile ? 'file name' : 'folder name'} at position ${position + 1}`;
      return fail(
        'shape',
        isFile && segment.length > 0
          ? 'has an empty file name before the extension'
          : `has an empty ${where} (leading, trailing or doubled "/")`,
        { position: position + 1 },
      );
    }
    for (const ch of checked) {
      position++;
      if (!NAME_CHAR.test(ch)) {
        const problem = `contains the character ${describeChar(ch)} at position ${position} (in ${what} "${segment}")`;
        return fail('character', `${problem}, which is not allowed`, { character: ch, position, segment });
      }
    }
    if (isFile && lastDot !== -1) {
      position++; // the dot
      if (!(REPORT_EXTENSIONS as readonly string[]).includes(extension.toLowerCase())) {
        const bad = [...extension].find((ch) => !/^[A-Za-z0-9]$/.test(ch));
        if (bad !== undefined)
          return fail(
            'character',
            `has the character ${describeChar(bad)} in its extension "${extension}", which is not allowed`,
            { position, extension },
          );
        return fail(
          'shape',
          extension === ''
            ? `has an empty extension after the dot at position ${position}`
            : `has the extension "${extension}"; a report is .avw or .avx`,
          { position, extension },
        );
      }
    }
    position++; // the "/" separator
  }
  return { folders: segments.slice(0, -1), file: fileBase, extension };
}

/** Whether {@link checkReportName} found a problem. */
export function isReportNameProblem(r: ReportNameProblem | SplitName): r is ReportNameProblem {
  return 'problem' in r;
}

/**
 * Validates a report name and encodes it for the start path: `Sales/Orders` becomes `Sales%2FOrders.avw` (slash) or
 * `Sales%5COrders.avw` (backslash), each part `encodeURIComponent`ed, an explicit extension (`Ledger.avx`) kept.
 * @param context names the jobs.yaml job in the error message
 * @throws ReportNameError naming the job, the bad character, its 1-based position and how to fix it
 */
export function encodeReportName(name: string, pathEncoding: PathEncoding, context: { job?: string } = {}): string {
  const checked = checkReportName(name);
  if (isReportNameProblem(checked)) {
    const where = context.job === undefined ? `report name "${name}"` : `job "${context.job}": report name "${name}"`;
    throw new ReportNameError(`${where} ${checked.problem}. ${checked.howToFix}`, {
      job: context.job,
      reportName: name,
      ...checked.details,
    });
  }
  const separator = pathEncoding === 'backslash' ? '%5C' : '%2F';
  return (
    [...checked.folders.map(encodeURIComponent), encodeURIComponent(checked.file)].join(separator) +
    '.' +
    encodeURIComponent(checked.extension)
  );
}
