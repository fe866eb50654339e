/**
 * The reportname path segment (docs/report-export-service.md "Report naming rules"): URL-encoded, sub folders separated
 * by %2F (or %5C on servers that sanitize %2F), default extension avw, file name characters A-Z a-z 0-9 _ space.
 */

/** Allowed characters of a report file name and (our choice) of every folder name. */
const NAME = /^[A-Za-z0-9_ ]+$/;
const EXTENSION = /^[A-Za-z0-9]+$/;

/** How the simulated server treats separators. */
export interface ReportNameRules {
  /** %5C works as a sub folder separator (default true). */
  acceptBackslash: boolean;
  /** %2F works as a sub folder separator (default true; false simulates a sanitizing server). */
  acceptEncodedSlash: boolean;
}

/** A parsed report name, or why it is refused. */
export type ParsedReportName =
  | { ok: true; folders: string[]; name: string; extension: string; /** folders/name.ext with '/' */ path: string }
  | { ok: false; reason: string };

/**
 * Parses the still URL-encoded reportname segment.
 * @param raw the raw segment as it appeared in the request path (no unencoded '/')
 */
export function parseReportName(raw: string, rules: ReportNameRules): ParsedReportName {
  if (!rules.acceptEncodedSlash && /%2f/i.test(raw))
    return { ok: false, reason: 'encoded slash (%2F) is blocked by URL sanitizing' };
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return { ok: false, reason: 'report name is not valid URL encoding' };
  }
  const parts = decoded.split(rules.acceptBackslash ? /[/\\]/ : '/');
  const file = parts.pop()!;
  for (const folder of parts) {
    if (!NAME.test(folder)) return { ok: false, reason: `invalid folder name in report path` };
  }
  const dot = file.lastIndexOf('.');
  const name = dot < 0 ? file : file.slice(0, dot);
  const extension = dot < 0 ? 'avw' : file.slice(dot + 1);
  if (!NAME.test(name)) {
    return { ok: false, reason: 'report file name may contain only A-Z, a-z, 0-9, underscore and space' };
  }
  if (!EXTENSION.test(extension)) return { ok: false, reason: 'invalid report file extension' };
  return { ok: true, folders: parts, name, extension, path: [...parts, `${name}.${extension}`].join('/') };
}
