/**
 * The jobs.yaml schema: one zod schema with a description and a default on every option, from which
 * docs/configuration.md "Configuration reference" is generated (reference.ts).
 */
import { z } from 'zod';
import { PATH_ENCODINGS } from '../report-api/report-name.ts';
import {
  AUTH_KINDS,
  CREDENTIALS_WAYS,
  MANDANT_PATTERN,
  MAX_SCOPES,
  MIN_PAGING,
  PAGING_PROBLEM,
  SCOPES_PROBLEM,
} from '../report-api/report-rules.ts';
import {
  ALERT_EVENTS,
  ALERT_FORMATS,
  MIN_PRODUCT_VERSION,
  OUTPUT_TYPES,
  outputShape,
  SCHEMA_CHANGES,
  WRITE_MODES,
} from '../vocabulary.ts';
import { DURATION_HINT, parseWindow } from './duration.ts';
import { DEFAULT_MAX_VALUE_BYTES } from '../pages/value-limit.ts';
import { FIXED_COLUMNS } from '../pages/fixed-columns.ts';
import { closestMatch } from '../closest-match.ts';

/** A Postgres identifier as written in config (schema or table). */
const IDENT = '[A-Za-z_][A-Za-z0-9_]*';

/** A duration such as `26h` (duration.ts). */
const duration = () =>
  z.string().refine((t) => parseWindow(t) !== undefined, { message: `not a duration: ${DURATION_HINT}` });

const positiveInt = () => z.number().int().positive();

/** A whole number of at least `min`. */
const int = (min: number, message?: string) =>
  z
    .number()
    .int()
    .min(min, message === undefined ? undefined : { message });

/** Adds a custom issue at `path` in a superRefine. */
const issue = (ctx: z.core.$RefinementCtx, path: (string | number)[], message: string) =>
  ctx.addIssue({ code: 'custom', path, message });

export const DEFAULT_HISTORY_KEEP = '90d';

/** Report jobs open on one server at once (docs/architecture.md "A fleet"). */
export const DEFAULT_MAX_CONCURRENT_REPORTS = 4;

/** Longest time for one output page, in ms (docs/architecture.md "Limits"). */
export const DEFAULT_PAGE_TIMEOUT_MS = 600_000;

/** Longest time for one attempt, in ms (docs/architecture.md "Limits"). */
export const DEFAULT_MAX_RUN_MS = 21_600_000;

/** The longest delay a timer holds, in ms (2^31 - 1): a longer one fires at once. */
export const MAX_DEADLINE_MS = 2_147_483_647;

const deadlineMs = () =>
  positiveInt().max(MAX_DEADLINE_MS, { message: `at most ${MAX_DEADLINE_MS} ms (about 24 days)` });

const PAGE_TIMEOUT_TEXT =
  'Longest time one output page may take, in ms: its request, its headers and its body to the last byte (while ' +
  'its rows are copied; a page asked for ahead counts from when the page before it was read). A slower page fails ' +
  'the attempt with PAGE_TIMEOUT, which is retried. requestTimeoutMs only bounds one pause between bytes, so ' +
  'without this a server that trickles a page holds the run, its load transaction, its locks and its report slot ' +
  'for good. 10 min: a page of 10 000 rows takes seconds, one of a large paging tens of seconds, on a slow ERP.';

const MAX_RUN_TEXT =
  'Longest time one attempt may take from its start to its commit, in ms: waiting for the report (at most ' +
  'pollTimeoutMs, 1 h) and every page (each at most pageTimeoutMs). A longer attempt fails with RUN_TIMEOUT, ' +
  'which is retried; it rolls back and frees its transaction, locks and report slot. 6 h leaves a report its hour ' +
  'to render and five more for tens of millions of rows; the wait for a report slot before the attempt does not ' +
  'count.';

/**
 * Kept pages (docs/operations.md "Kept pages"): `{ keepDays }` on a job's target, its connection or the defaults (the
 * nearest wins); unset everywhere: no pages are kept.
 */
export const archiveSchema = z
  .object({
    keepDays: int(1)
      .max(3650)
      .describe(
        'Days the pages of each attempt are kept (1 to 3650), compressed, in PostgreSQL; the janitor deletes them ' +
          'after, or with the attempt when history.keep is shorter. On a target, a connection or in defaults: the ' +
          'nearest wins; unset everywhere: off. Documents (pdf, excel, word) a load commits are kept in their ' +
          'target, their pages only when the load fails.',
      ),
  })
  .strict();

/** jobs.yaml `archive`: how long the pages of each attempt are kept. */
export type ArchiveConfig = z.infer<typeof archiveSchema>;

export const connectionSchema = z
  .object({
    baseUrl: z.url().describe("Base URL of the server, e.g. https://erp.example.com (the service's base URL)."),
    auth: z
      .enum(AUTH_KINDS)
      .default('client_credentials')
      .describe(
        'Kind of service user (docs/report-export-service.md "Authentication"): client_credentials (Client-ID + ' +
          'Client-Secret) or authorization_code (user-dependent: a product user logs in once with ' +
          '`report-etl login <connection>`).',
      ),
    clientId: z
      .string()
      .min(1)
      .describe('Client-ID of the service user (docs/report-export-service.md "What the service does" 5).'),
    clientSecret: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Client-Secret of the service user, as ${VAR} from the environment; required for client_credentials, for ' +
          'authorization_code only of a trusted (confidential) client.',
      ),
    scopes: z
      .array(z.string().regex(/^[^\s]+$/, { message: 'a scope name has no spaces (scopes are sent space-separated)' }))
      .max(MAX_SCOPES, { message: SCOPES_PROBLEM })
      .optional()
      .describe(
        'authorization_code: the scopes the login requests, e.g. [svc.pad, offline_access] (at most 25; ' +
          'offline_access gives a refresh token of 60 days instead of 10 hours).',
      ),
    redirectUri: z
      .url({
        protocol: /^https?$/,
        message: 'redirectUri must be an absolute http(s) URL, e.g. https://etl.example.com/oauth/callback',
      })
      .optional()
      .describe(
        "authorization_code: the redirect URI configured for the service user; the admin server's " +
          '/oauth/callback, reachable from the ERP server.',
      ),
    tokenOrigin: z
      .url({ protocol: /^https?$/, message: 'tokenOrigin must be an http(s) origin, e.g. https://login.example.com' })
      .transform((u) => new URL(u).origin)
      .optional()
      .describe(
        "The origin of the token endpoint when the discovery document names one off baseUrl's; else such a " +
          'document is refused, for it would receive the credentials.',
      ),
    credentials: z
      .enum(CREDENTIALS_WAYS)
      .default('header')
      .describe('How the token request carries the credentials: header (Basic, recommended) or body.'),
    pathEncoding: z
      .enum(PATH_ENCODINGS)
      .default('slash')
      .describe('Sub folder separator in report names: slash (%2F) or backslash (%5C, for sanitizing servers).'),
    timezone: z
      .string()
      .default('UTC')
      .describe('IANA time zone of txt timestamps (they carry no offset) and of the default schedule zone.'),
    requestTimeoutMs: positiveInt()
      .default(60_000)
      .describe(
        "Timeout of one HTTP request in ms: for its answer's headers, and for each pause between two bytes of its " +
          'body (a whole page is bounded by pageTimeoutMs).',
      ),
    pollIntervalMs: positiveInt()
      .default(250)
      .describe('First job status poll interval in ms (docs/report-export-service.md "Limits": 250).'),
    pollMaxIntervalMs: positiveInt().default(5_000).describe('Cap of the growing poll interval in ms.'),
    maxConcurrentReports: positiveInt()
      .default(DEFAULT_MAX_CONCURRENT_REPORTS)
      .describe(
        'Most report jobs of this connection open on its server at once, across every worker process and machine ' +
          'sharing the Redis (from the start request to the DELETE); runs beyond it wait for a slot in order of ' +
          'their logical time. The server names no limit; 4 protects an ERP that also serves its users.',
      ),
    pollTimeoutMs: positiveInt()
      .default(3_600_000)
      .describe('How long a job may stay Running before the run fails, in ms.'),
    pageTimeoutMs: deadlineMs().default(DEFAULT_PAGE_TIMEOUT_MS).describe(PAGE_TIMEOUT_TEXT),
    maxRunMs: deadlineMs().default(DEFAULT_MAX_RUN_MS).describe(MAX_RUN_TEXT),
    freshness: duration()
      .optional()
      .describe('Default freshness of the jobs on this connection, e.g. 26h; see jobs.<name>.freshness.'),
    productVersion: int(2000)
      .max(9999)
      .optional()
      .describe(
        'Product version of the server, e.g. 2025; gates pdf (2025+) and the excel/word types (2026+) ' +
          '(docs/report-export-service.md "Versioning" 2). Unset: any.',
      ),
    pkce: z
      .boolean()
      .default(true)
      .describe(
        'authorization_code: send PKCE (RFC 7636, S256) with the login; a server that does not know it ignores it. ' +
          'false only for a server that refuses the login because of it.',
      ),
    archive: archiveSchema
      .optional()
      .describe(
        'Keep the pages of its jobs\' attempts (docs/operations.md "Kept pages") unless a target sets its own.',
      ),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.auth === 'client_credentials') {
      if (c.clientSecret === undefined)
        issue(
          ctx,
          ['clientSecret'],
          'missing required key "clientSecret": a client_credentials service user needs its Client-Secret (or set ' +
            'auth: authorization_code for a user-dependent service user)',
        );
      for (const key of ['scopes', 'redirectUri'] as const)
        if (c[key] !== undefined)
          issue(ctx, [key], `${key} is used by auth: authorization_code only (auth is client_credentials)`);
    } else {
      if (c.redirectUri === undefined)
        issue(
          ctx,
          ['redirectUri'],
          'missing required key "redirectUri": auth: authorization_code needs the redirect URI configured for the ' +
            'service user (docs/report-export-service.md "User-dependent service user" step 1), e.g. ' +
            'https://etl.example.com/oauth/callback',
        );
      if (c.scopes === undefined || c.scopes.length === 0)
        issue(
          ctx,
          ['scopes'],
          'auth: authorization_code needs scopes, e.g. [svc.pad, offline_access] (docs/report-export-service.md ' +
            '"Scope rules" 4: requested scopes must be named)',
        );
    }
  });

/** One connection to a Report Export Service. */
export type ConnectionConfig = z.infer<typeof connectionSchema>;

/** The largest mandant of a list: the mandant column is a PostgreSQL `integer` (mandant-column.ts). */
const MAX_LISTED_MANDANT = 2_147_483_647;

const reportSchema = z
  .object({
    mandant: z
      .union([
        z.union([z.number().int().nonnegative(), z.string().regex(MANDANT_PATTERN)]).transform((v) => String(v)),
        z
          .array(
            positiveInt().max(MAX_LISTED_MANDANT, {
              message:
                `a mandant of a list is at most ${MAX_LISTED_MANDANT}: the target keeps each row's mandant in an ` +
                'integer column (docs/loaded-tables.md "Many mandants")',
            }),
          )
          .min(1, { message: 'a list of mandants needs at least one, e.g. [7777, 8888]' })
          .superRefine((list, ctx) => {
            list.forEach((m, i) => {
              if (list.indexOf(m) !== i)
                issue(ctx, [i], `mandant ${m} is listed twice: each mandant is one run per tick, list it once`);
            });
          }),
      ])
      .describe(
        'Client number (mandant) the report runs in, or a list of them (docs/loaded-tables.md "Many mandants").',
      ),
    name: z
      .string()
      .min(1)
      .describe('Report name, sub folders separated by "/"; ".avw" is appended when no extension is given.'),
    outputType: z
      .enum(OUTPUT_TYPES)
      .default('json')
      .describe(
        'Output type, any of the service\'s output types (docs/report-export-service.md "Output types"); what ' +
          'each loads as: docs/loaded-tables.md "Output types" (documents need productVersion 2025+/2026+).',
      ),
    paging: int(MIN_PAGING, PAGING_PROBLEM)
      .default(10_000)
      .describe('Rows per page (docs/report-export-service.md "Limits": at least 10).'),
    maxValueBytes: int(1024)
      .default(DEFAULT_MAX_VALUE_BYTES)
      .describe(
        'Largest value (in bytes) a page may hold; a larger one fails the run naming page, row and column, so ' +
          'memory stays bounded (default 64 MiB).',
      ),
    parameters: z
      .record(
        z.string(),
        z.union([z.string(), z.number(), z.boolean()]).transform((v) => String(v)),
      )
      .default({})
      .describe("Values of the report's own input parameters, name to value."),
  })
  .strict();

export const targetSchema = z
  .object({
    table: z
      .string()
      .regex(new RegExp(`^(${IDENT}\\.)?${IDENT}$`), {
        message: 'table must be schema.table (letters, digits, underscore)',
      })
      .describe(
        'Target table, schema-qualified (schema "public" when not given); schema and table at most 63 bytes each. ' +
          'Jobs that write one table must use the same mode and key.',
      ),
    mode: z.enum(WRITE_MODES).default('replace').describe('Write mode: replace | append | merge.'),
    key: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Key columns for merge: normalised report column names (Artikel Nr → artikel_nr), each a column of the ' +
          'report and of an existing target.',
      ),
    columns: z
      .record(z.string(), z.string().regex(/^[A-Za-z][A-Za-z0-9_ ,()[\]]*$/, { message: 'not a type name' }))
      .default({})
      .describe(
        'Declared Postgres types by normalised column name; a declared type wins over inference. A name that is a ' +
          'column of neither the report nor the target fails the run before anything is loaded.',
      ),
    rowsAt: z
      .string()
      .regex(/^(\/([^~]|~[01])*)+$/, {
        message: 'rowsAt must be a JSON pointer (RFC 6901) such as /orders or /report/rows',
      })
      .optional()
      .describe(
        'json_userdef(_compact) only: JSON pointer (RFC 6901) to the array of row objects in every page, loaded ' +
          'as typed rows like json; unset: one jsonb document per page.',
      ),
    guard: z
      .object({
        minRows: int(0)
          .optional()
          .describe(
            'Fewest rows a run may load; fewer fails the run with GUARD_TRIPPED and the target untouched. Default ' +
              '1 for replace (an empty result never empties the table), 0 otherwise; set 0 where an empty result ' +
              'is right.',
          ),
        maxShrinkPercent: z
          .number()
          .min(0)
          .max(100)
          .optional()
          .describe(
            'replace only: most the target may shrink, in percent of the rows it holds now (with replaceRange: of ' +
              "the rows in the run's range); a run that would shrink it more fails with GUARD_TRIPPED and the " +
              'target untouched. Unset: no limit.',
          ),
      })
      .strict()
      .default({})
      .describe(
        'Guards against a wrong load (docs/loaded-tables.md "Guards and schema changes"); ' +
          '`replay --accept-guard` overrides them.',
      ),
    replaceRange: z
      .object({
        column: z
          .string()
          .min(1)
          .describe(
            'The normalised report column that places a row in a period (Buchungstag → buchungstag), a column of ' +
              'every run; declare its type under target.columns (date, timestamptz, …) for a new target.',
          ),
        from: z
          .string()
          .min(1)
          .describe('First value of the run\'s period (inclusive), a template such as "%{logicalEnd-7d:yyyy-MM-dd}".'),
        to: z
          .string()
          .min(1)
          .describe('End of the run\'s period (exclusive), a template such as "%{logicalEnd:yyyy-MM-dd}".'),
      })
      .strict()
      .optional()
      .describe('replace only: replace the rows in [from, to) alone (docs/loaded-tables.md "Replacing one period").'),
    mandantColumn: z
      .string()
      .regex(new RegExp(`^${IDENT}$`), {
        message: 'mandantColumn must be a column name (letters, digits, underscore), e.g. mandant',
      })
      .max(63, { message: 'mandantColumn is at most 63 bytes (a PostgreSQL name)' })
      .refine((c) => !c.startsWith('_etl_'), {
        message: 'mandantColumn may not start with _etl_ (the lineage columns, docs/loaded-tables.md): choose another',
      })
      .optional()
      .describe(
        'With a list under report.mandant only (default mandant): the integer column of the target holding each ' +
          'row\'s mandant (docs/loaded-tables.md "Many mandants"); no report column may have this normalised name.',
      ),
    schemaChanges: z
      .enum(SCHEMA_CHANGES)
      .default('evolve')
      .describe(
        "When the report's columns differ from the existing table's: evolve adds new columns (missing ones are " +
          'loaded NULL); freeze fails the run with the difference listed (added, missing, type changed) and the ' +
          'target untouched.',
      ),
    load: z
      .enum(['document', 'rows'])
      .default('document')
      .describe(
        "excel-xlsx_data only: document archives each page's workbook; rows loads its first sheet as typed rows " +
          '(header row = column names).',
      ),
    archive: archiveSchema
      .optional()
      .describe(
        'Keep the pages of each attempt as served, also when its load fails (docs/operations.md "Kept pages").',
      ),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.mode === 'merge' && t.key.length === 0)
      issue(ctx, ['key'], 'merge needs key: the columns that identify a row');
    if (t.mode !== 'merge' && t.key.length > 0)
      issue(ctx, ['key'], `key is used by mode merge only (mode is ${t.mode})`);
    if (t.mode !== 'replace' && t.replaceRange !== undefined)
      issue(
        ctx,
        ['replaceRange'],
        `replaceRange replaces one period's rows and needs mode replace (mode is ${t.mode}): set mode: replace, or ` +
          'remove replaceRange',
      );
    if (t.mode !== 'replace' && t.guard.maxShrinkPercent !== undefined)
      issue(
        ctx,
        ['guard', 'maxShrinkPercent'],
        `maxShrinkPercent guards mode replace only (mode is ${t.mode}, which never removes rows): remove it, or ` +
          'use minRows',
      );
  });

const retrySchema = z
  .object({
    attempts: int(1).default(3).describe('Attempts per run before it is failed for good.'),
    backoffMs: int(0).default(30_000).describe('First retry delay in ms; doubles each attempt.'),
  })
  .strict();

export const jobSchema = z
  .object({
    connection: z.string().min(1).describe('Name of an entry under connections.'),
    schedule: z.string().optional().describe('Cron expression (5 or 6 fields); no schedule means manual runs only.'),
    timezone: z
      .string()
      .optional()
      .describe(
        "Time zone of the schedule and of the dates its %{...} templates render; defaults to the connection's.",
      ),
    catchup: z
      .union([z.enum(['none', 'latest']), z.object({ all: z.string().describe('Window, e.g. 2d or 12h') }).strict()])
      .default('none')
      .describe('Missed ticks on scheduler start: none | latest | { all: <window> }.'),
    overlap: z.enum(['skip', 'wait']).default('wait').describe('When the previous run is still going: skip or wait.'),
    retry: retrySchema.optional().describe('Attempts and backoff; defaults from the top-level defaults.'),
    report: reportSchema.describe(
      'Which report to run and how (docs/report-export-service.md "Start-report request body").',
    ),
    target: targetSchema.describe('Where the rows go and how (write mode, key, declared types).'),
    freshness: duration()
      .optional()
      .describe(
        'Longest time since the last successful run before the job is stale (admin pages, metric, stale alert), ' +
          "e.g. 26h; default the connection's, else none.",
      ),
    pageTimeoutMs: deadlineMs()
      .optional()
      .describe(
        "This job's longest time for one output page, in ms (see connections.<name>.pageTimeoutMs), e.g. for a " +
          "report of a large paging; default the connection's.",
      ),
    maxRunMs: deadlineMs()
      .optional()
      .describe(
        "This job's longest time for one attempt from its start to its commit, in ms (see " +
          "connections.<name>.maxRunMs); default the connection's.",
      ),
  })
  .strict()
  .superRefine((j, ctx) => {
    const type = j.report.outputType;
    const { key, mode } = j.target;
    if (j.target.rowsAt !== undefined && type !== 'json_userdef' && type !== 'json_userdef_compact')
      issue(
        ctx,
        ['target', 'rowsAt'],
        `rowsAt applies to json_userdef and json_userdef_compact only (outputType is ${type}): remove it`,
      );
    if (j.target.load === 'rows' && type !== 'excel-xlsx_data')
      issue(ctx, ['target', 'load'], `load: rows applies to excel-xlsx_data only (outputType is ${type}): remove it`);
    const shape = outputShape(type, j.target);
    if (shape === 'file' && mode === 'merge')
      issue(
        ctx,
        ['target', 'mode'],
        `mode merge does not apply to documents (outputType ${type}): use replace or append`,
      );
    if (shape !== 'rows' && shape !== 'file' && mode === 'merge') {
      // A key PostgreSQL cannot compare (xml has no equality) would fail the first load.
      const fixed = FIXED_COLUMNS[shape];
      const keyable = fixed.filter((c) => c.type !== 'xml').map((c) => c.name);
      key.forEach((k, i) => {
        if (keyable.includes(k)) return;
        const column = fixed.find((c) => c.name === k);
        const near = closestMatch(k, keyable);
        issue(
          ctx,
          ['target', 'key', i],
          column
            ? `${k} is of type ${column.type}, which PostgreSQL cannot compare, so it cannot be a merge key: merge ` +
                `by ${keyable.join(', ')}`
            : `${k} is not a column of what outputType ${type} loads${near ? ` (did you mean "${near}"?)` : ''}: ` +
                `its table has the fixed columns ${fixed.map((c) => c.name).join(', ')} ` +
                '(docs/loaded-tables.md "Output types")',
        );
      });
    }
    mandantProblems(j, shape, (path, message) => issue(ctx, path, message));
    if (shape !== 'rows' && Object.keys(j.target.columns).length > 0)
      issue(
        ctx,
        ['target', 'columns'],
        `columns declares types of typed rows; outputType ${type} loads fixed columns ` +
          '(docs/loaded-tables.md "Output types"): remove it',
      );
  });

export type JobConfig = z.infer<typeof jobSchema>;

/**
 * The checks of a job's mandants that know its columns (docs/loaded-tables.md "Many mandants"): mandantColumn only
 * with a list of mandants, and no column the job names (key, declared, range, a fixed shape's) of its name; a report
 * column of that name is found at the first run, before anything is loaded (warehouse/mandant-column.ts).
 */
function mandantProblems(
  j: { report: { mandant: string | number[] }; target: z.infer<typeof targetSchema> },
  shape: ReturnType<typeof outputShape>,
  add: (path: (string | number)[], message: string) => void,
): void {
  const t = j.target;
  if (!Array.isArray(j.report.mandant)) {
    if (t.mandantColumn !== undefined)
      add(
        ['target', 'mandantColumn'],
        `mandantColumn names the column of a job with a list of mandants (report.mandant is ${j.report.mandant}): ` +
          'remove it, or give report.mandant a list',
      );
    return;
  }
  const column = t.mandantColumn ?? 'mandant';
  const fix = `set target.mandantColumn to another name, e.g. ${column}_nr`;
  const clash = (path: (string | number)[], what: string) =>
    add(path, `${what} is ${column}, the column that holds each row's mandant: ${fix}`);
  t.key.forEach((k, i) => (k === column ? clash(['target', 'key', i], 'this merge key column') : undefined));
  if (column in t.columns) clash(['target', 'columns'], `a declared column`);
  if (t.replaceRange?.column === column) clash(['target', 'replaceRange', 'column'], 'the range column');
  if (shape !== 'rows' && FIXED_COLUMNS[shape].some((c) => c.name === column))
    clash(['report', 'outputType'], `a fixed column of what this output type loads (${shape})`);
}

const alertTargetSchema = z
  .object({
    webhook: z
      .url()
      .describe('URL the alert is POSTed to; it holds a credential, so give it as ${VAR} (never logged).'),
    events: z
      .array(z.enum(ALERT_EVENTS))
      .min(1)
      .default([...ALERT_EVENTS])
      .describe('Events sent to this target: failed | recovered | stale | login_required.'),
    format: z
      .enum(ALERT_FORMATS)
      .default('generic')
      .describe('Body: generic (JSON document) | slack (incoming webhook) | teams (Adaptive Card message).'),
  })
  .strict();

/** One alert target of jobs.yaml `alerts:`. */
export type AlertTargetConfig = z.infer<typeof alertTargetSchema>;

const historySchema = z
  .object({
    keep: duration()
      .refine((t) => (parseWindow(t) ?? 0) >= 86_400_000, { message: 'keep at least 1d of run history' })
      .default(DEFAULT_HISTORY_KEEP)
      .describe(
        "How long etl.attempts, etl.run_errors and etl.runs are kept (at least 1d); a job's last success and last " +
          'failure are always kept.',
      ),
  })
  .strict();

export const configSchema = z
  .object({
    connections: z.record(z.string(), connectionSchema).describe('Report Export Service connections by name.'),
    defaults: z
      .object({
        retry: retrySchema
          .default({ attempts: 3, backoffMs: 30_000 })
          .describe('Attempts and backoff of every job that sets none.'),
        archive: archiveSchema
          .optional()
          .describe('Keep the pages of every job\'s attempts (docs/operations.md "Kept pages"), unless set nearer.'),
      })
      .strict()
      .default({ retry: { attempts: 3, backoffMs: 30_000 } })
      .describe('Defaults for every job.'),
    jobs: z
      .record(z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: 'job names use letters, digits, _ . -' }), jobSchema)
      .describe(
        'Scheduled extracts by name (letters, digits, _ . -); the name is used in the queue and the run history.',
      ),
    alerts: z
      .record(z.string(), alertTargetSchema)
      .default({})
      .describe("Webhook alert targets by name; every job's events go to every target that lists them."),
    history: historySchema
      .default({ keep: DEFAULT_HISTORY_KEEP })
      .describe('Retention of the run history, applied by the janitor.'),
  })
  .strict()
  .superRefine((c, ctx) => {
    for (const [name, job] of Object.entries(c.jobs)) {
      const connection = c.connections[job.connection];
      const since = MIN_PRODUCT_VERSION[job.report.outputType];
      if (connection?.productVersion !== undefined && since !== undefined && connection.productVersion < since)
        issue(
          ctx,
          ['jobs', name, 'report', 'outputType'],
          `output type ${job.report.outputType} needs product version ${since} or later, but connection ` +
            `"${job.connection}" has productVersion ${connection.productVersion} (docs/report-export-service.md ` +
            '"Versioning" 2): choose another output type or raise productVersion if the server is newer',
        );
      if (!(job.connection in c.connections))
        issue(
          ctx,
          ['jobs', name, 'connection'],
          `unknown connection "${job.connection}" (known: ${Object.keys(c.connections).join(', ') || 'none'})`,
        );
    }
  });

/** The whole validated jobs.yaml. */
export type EtlConfig = z.infer<typeof configSchema>;
