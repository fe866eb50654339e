/**
 * Links from a trace id to the trace in the team's tracing UI (docs/observability.md "Tracing"): the setting
 * `REPORT_ETL_TRACE_URL`, a URL template with `{traceId}` (`https://tempo.example/trace/{traceId}`), turns every
 * trace id the admin pages show into a link. Unset, an id stays plain text.
 */

/** The environment variable holding the template. */
export const TRACE_URL_VARIABLE = 'REPORT_ETL_TRACE_URL';

/** The placeholder the template must hold. */
const PLACEHOLDER = '{traceId}';

/**
 * Checks `REPORT_ETL_TRACE_URL`.
 * @returns a sentence saying what is wrong and how to fix it, or undefined when it is unset or usable
 */
export function traceUrlProblem(setting = process.env[TRACE_URL_VARIABLE]): string | undefined {
  const template = setting?.trim();
  if (!template) return undefined;
  const example = 'e.g. https://tempo.example/trace/{traceId}';
  if (!template.includes(PLACEHOLDER))
    return `${TRACE_URL_VARIABLE}=${template}: no ${PLACEHOLDER} in it (write where a trace id goes, ${example})`;
  let url: URL;
  try {
    url = new URL(template.replaceAll(PLACEHOLDER, '0'.repeat(32)));
  } catch {
    return `${TRACE_URL_VARIABLE}=${template}: not a URL (write an http or https address, ${example})`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `${TRACE_URL_VARIABLE}=${template}: only http and https links are made (${example})`;
  return undefined;
}

/**
 * The link of trace `traceId` (32 hex digits), or undefined when no usable template is set or the id is not one.
 * @param setting `REPORT_ETL_TRACE_URL` (default: the environment's)
 */
export function traceUrl(
  traceId: string | null | undefined,
  setting = process.env[TRACE_URL_VARIABLE],
): string | undefined {
  const template = setting?.trim();
  if (!template || !traceId || !/^[0-9a-f]{32}$/i.test(traceId) || traceUrlProblem(template)) return undefined;
  return template.replaceAll(PLACEHOLDER, encodeURIComponent(traceId));
}
