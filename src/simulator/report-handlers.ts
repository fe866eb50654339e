/**
 * {report_api} start, status and delete (docs/report-export-service.md "Endpoints" #1, #2, #4), and the
 * bearer/interface-access checks every {report_api} call passes first. Answers the service's description does not show,
 * and the simulator's choice for them:
 * - missing, unknown or expired token: 401, empty body, WWW-Authenticate: Bearer error="invalid_token" (RFC 6750);
 * - forbidden report name, bad mandant, bad JSON body, missing or unsupported outputType: 400 problem+json;
 * - unknown report: 200 Job, FinishedError at once, message "Report '<path>' not found";
 * - the parameter SIM_FAIL_MANDANT (a mandant, or several comma-separated): a report started in one of them fails
 *   (FinishedError, "Mandant <n> is locked for reports"), so that a test can fail one mandant of many;
 * - unknown job id (status, output, delete): 404 problem+json (an output page past the end is 404 with an
 *   empty body, so a client can tell the two apart).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { reportData } from './catalogue.ts';
import type { SimContext } from './context.ts';
import { REPORT_API_HEADERS, readBody, send, sendJson, sendProblem } from './http-util.ts';
import { jobBody, makeJob, type SimJob } from './jobs.ts';
import { dataKey } from './page-cache.ts';
import { parseReportName } from './report-name.ts';
import { SIMULATED_OUTPUT_TYPES, type SimulatedOutputType } from './render.ts';
import { padBytesOf, pageFaultOf } from './page-faults.ts';
import { MIN_PRODUCT_VERSION, type OutputType } from '../vocabulary.ts';
import type { SimulatorClient } from './types.ts';

/** Rows per page when paging is missing or below the minimum (docs/report-export-service.md "Limits"). */
export const DEFAULT_PAGING = 10_000;
/** Minimum paging (docs/report-export-service.md "Limits"). */
export const MIN_PAGING = 10;

/** Text of the rights failure (docs/report-export-service.md "Errors": no report application right or licence). */
export const RIGHTS_MESSAGE =
  'Access denied: the service user has no report application right or no report licence for the report interface.';

/**
 * Docs URL prefix of the problem type (docs/report-export-service.md "Error problem body":
 * {docs_url}/erp/authorization/...).
 */
export const DOCS_URL = 'https://docs.report-export.example';

/**
 * Checks the bearer token and the interface access option; answers 401 or 403 itself.
 * @returns the calling client, or undefined when an answer was sent
 */
export function authorize(ctx: SimContext, req: IncomingMessage, res: ServerResponse): SimulatorClient | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  const check = m ? ctx.tokens.check(m[1]!) : ({ ok: false, reason: 'missing' } as const);
  if (!check.ok) {
    ctx.counters.unauthorized++;
    ctx.logger.debug({ reason: check.reason }, 'simulator: bearer token refused');
    send(res, 401, { ...REPORT_API_HEADERS, 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    return undefined;
  }
  const client = ctx.clients.get(check.clientId);
  if (!client) {
    ctx.counters.unauthorized++;
    send(res, 401, { ...REPORT_API_HEADERS, 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    return undefined;
  }
  if (ctx.faults.faults.echo === 'report') {
    const echoed = `received Authorization: ${req.headers.authorization ?? ''}`;
    sendProblem(
      res,
      403,
      { title: 'Forbidden', detail: echoed },
      { ...REPORT_API_HEADERS, SvcServletExceptionMessage: echoed },
    );
    return undefined;
  }
  if (client.interfaceAccess === false) {
    // docs/report-export-service.md "Errors": 403, problem+json, SvcServletExceptionMessage header.
    sendProblem(
      res,
      403,
      {
        title: 'Forbidden',
        type: `${DOCS_URL}/erp/authorization/user-service-access-forbidden`,
        instance: client.clientId,
        detail: 'svcreport engine',
      },
      {
        ...REPORT_API_HEADERS,
        SvcServletExceptionMessage: `User ${client.clientId} has no access to the service svcreport`,
      },
    );
    return undefined;
  }
  return client;
}

function badRequest(res: ServerResponse, detail: string): void {
  sendProblem(res, 400, { title: 'Bad Request', detail }, REPORT_API_HEADERS);
}

/** Whether the report parameter SIM_FAIL_MANDANT names `mandant` (see the file comment). */
function lockedMandant(parameters: Record<string, string>, mandant: string): boolean {
  const listed = parameters.SIM_FAIL_MANDANT;
  return listed !== undefined && listed.split(',').some((m) => m.trim() === mandant);
}

/** POST {report_api}/report/{mandant}/{reportname} (docs/report-export-service.md "Endpoints" #1). */
export async function handleStart(
  ctx: SimContext,
  client: SimulatorClient,
  mandant: string,
  rawName: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (!/^\d{1,9}$/.test(mandant)) return badRequest(res, 'mandant must be a client number');
  const name = parseReportName(rawName, ctx.nameRules);
  if (!name.ok) return badRequest(res, `Invalid report name: ${name.reason}`);
  let body: { outputType?: unknown; paging?: unknown; parameters?: unknown };
  try {
    const raw = (await readBody(req)).toString('utf8');
    body = raw.trim() === '' ? {} : (JSON.parse(raw) as typeof body);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
  } catch {
    return badRequest(res, 'request body must be a JSON object {outputType, paging, parameters}');
  }
  const outputType = body.outputType;
  if (typeof outputType !== 'string' || !(SIMULATED_OUTPUT_TYPES as readonly string[]).includes(outputType)) {
    return badRequest(res, `outputType must be one of ${SIMULATED_OUTPUT_TYPES.join(', ')} in this simulator`);
  }
  const since = MIN_PRODUCT_VERSION[outputType as OutputType];
  if (ctx.productVersion !== undefined && since !== undefined && ctx.productVersion < since) {
    // An older server does not know the type at all (the simulator's choice, see SimulatorOptions.productVersion).
    return badRequest(res, `Unknown outputType '${outputType}'`);
  }
  const paging =
    typeof body.paging === 'number' && Number.isInteger(body.paging) && body.paging >= MIN_PAGING
      ? body.paging
      : DEFAULT_PAGING;
  const parameters: Record<string, string> = {};
  if (body.parameters !== undefined && body.parameters !== null) {
    if (typeof body.parameters !== 'object' || Array.isArray(body.parameters))
      return badRequest(res, 'parameters must be an object');
    for (const [k, v] of Object.entries(body.parameters)) parameters[k] = String(v);
  }
  const fault = pageFaultOf(parameters);
  const now = Date.now();
  const common = {
    clientId: client.clientId,
    mandant,
    reportPath: name.path,
    outputType: outputType as SimulatedOutputType,
    paging,
    durationMs: ctx.jobDurationMs,
    now,
    dataKey: dataKey(name.path, parameters, ctx.seed, { mandant: String(mandant), revision: ctx.revision }),
    fault: typeof fault === 'object' ? fault : undefined,
    padBytes: padBytesOf(parameters),
  };
  let job: SimJob;
  if (client.reportRights === false) {
    job = makeJob({
      ...common,
      data: undefined,
      error: { message: RIGHTS_MESSAGE, immediate: true, withResult: true },
    });
  } else {
    const data = reportData(
      name.path,
      parameters,
      ctx.seed,
      { mandant: String(mandant), revision: ctx.revision },
      ctx.reports,
    );
    job = data
      ? makeJob({
          ...common,
          data,
          ...(typeof fault === 'string' ? { error: { message: fault, immediate: false, withResult: false } } : {}),
          ...(lockedMandant(parameters, mandant)
            ? { error: { message: `Mandant ${mandant} is locked for reports`, immediate: false, withResult: false } }
            : {}),
        })
      : makeJob({
          ...common,
          data: undefined,
          error: { message: `Report '${name.path}' not found`, immediate: true, withResult: false },
        });
  }
  ctx.jobs.set(job.id, job);
  ctx.counters.jobsCreated++;
  ctx.counters.peakOpenJobs = Math.max(ctx.counters.peakOpenJobs, ctx.jobs.size);
  ctx.logger.debug({ reportJobId: job.id, report: name.path, mandant, outputType, paging }, 'simulator: job created');
  sendJson(res, 200, jobBody(job, now, ctx.zone), REPORT_API_HEADERS);
}

/** 404 for an unknown job id (our choice: problem+json, see the module doc). */
export function jobNotFound(res: ServerResponse, id: string): void {
  sendProblem(res, 404, { title: 'Not Found', detail: `Job ${id} not found` }, REPORT_API_HEADERS);
}

/** GET {report_api}/jobs/{id} (docs/report-export-service.md "Endpoints" #2). */
export function handleStatus(ctx: SimContext, id: string, res: ServerResponse): void {
  const job = ctx.jobs.get(id);
  if (!job) return jobNotFound(res, id);
  sendJson(res, 200, jobBody(job, Date.now(), ctx.zone, ctx.faults.faults.misreportRows ?? 0), REPORT_API_HEADERS);
}

/** DELETE {report_api}/jobs/{id} (docs/report-export-service.md "Endpoints" #4): empty 200; later calls see 404. */
export function handleDelete(ctx: SimContext, id: string, res: ServerResponse): void {
  if (!ctx.jobs.delete(id)) return jobNotFound(res, id);
  ctx.counters.jobsDeleted++;
  send(res, 200, REPORT_API_HEADERS);
}
