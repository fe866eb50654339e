/**
 * Checks jobs.yaml text: parse keeping positions, interpolate `${VAR}`, validate with zod and the checks zod
 * cannot do. Every problem is collected with its position and path; load.ts decides what fails (isolate.ts).
 */
import { isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { validateDetailed } from 'node-cron';
import type { z } from 'zod';
import { ConfigError, coerceError } from '../errors.ts';
import { checkReportName, isReportNameProblem } from '../report-api/report-name.ts';
import { secretKeyProblem, SECRET_KEY_ENV } from '../secret-box.ts';
import { configSchema, jobSchema } from './schema.ts';
import { parseWindow } from './duration.ts';
import { cronRangeProblems } from './cron-ticks.ts';
import { formatPath, interpolate, WHOLE_REFERENCE, type ConfigPath } from './interpolate.ts';
import { closestMatch } from '../closest-match.ts';
import {
  get,
  isObj,
  issueProblems,
  makeLocator,
  problemAt,
  syntaxProblems,
  type Located,
  type Locator,
} from './problems.ts';
import { templateProblems } from './time-template.ts';
import { jobTargetProblems, sharedTargetProblems, type TargetCatalogue } from './target-checks.ts';
import { DEFAULT_MANDANT_COLUMN } from './mandants.ts';

/** Whether `zone` is an IANA time zone this Node knows. */
function isTimeZone(zone: string): boolean {
  // The canonical names cost 1-2 ms; a formatter loads the zone data (10 ms), so it is asked only about aliases.
  canonicalZones ??= new Set(Intl.supportedValuesOf('timeZone'));
  if (zone === 'UTC' || canonicalZones.has(zone)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

let canonicalZones: Set<string> | undefined;

/** The checks zod cannot express; each flags its path so that a schema refinement is not repeated. */
function extraChecks(
  doc: Document,
  data: unknown,
  loc: Locator,
  file: string,
  flagged: Set<string>,
  env: NodeJS.ProcessEnv,
  targets: TargetCatalogue | undefined,
): Located[] {
  const out: Located[] = [];
  const add = (path: ConfigPath, text: string, onKey = false, sharedTarget = false) => {
    flagged.add(formatPath(path));
    const pos = onKey ? loc.key(path.slice(0, -1), String(path[path.length - 1])) : undefined;
    const p = problemAt(loc, file, path, text, pos);
    out.push(sharedTarget ? { ...p, sharedTarget: true } : p);
  };
  /** Whether the source text at `path` matches `re`. */
  const writtenAs = (path: ConfigPath, re: RegExp) => {
    const node = doc.getIn(path, true);
    return isScalar(node) && typeof node.value === 'string' && re.test(node.value);
  };
  const zone = (path: ConfigPath, v: unknown) => {
    if (typeof v === 'string' && !isTimeZone(v))
      add(path, `unknown time zone "${v}": write an IANA zone name such as Europe/Zurich or UTC`);
  };
  const connections = get(data, ['connections']);
  const known = isObj(connections) ? Object.keys(connections) : [];
  for (const name of known) {
    const path = ['connections', name];
    const secret = [...path, 'clientSecret'];
    // The source text decides: a secret written into the file is a leak already. Through a merge key
    // (<<: *template) there is no node to check: refuse that too.
    const written = doc.getIn(secret, true) !== undefined || get(data, secret) !== undefined;
    if (written && !writtenAs(secret, WHOLE_REFERENCE))
      add(
        secret,
        'clientSecret must come from the environment: write ${REPORT_CLIENT_SECRET} (any variable name) instead of ' +
          'the secret itself',
      );
    zone([...path, 'timezone'], get(data, [...path, 'timezone']));
    // The refresh token is stored encrypted: no key, no login.
    const keyProblem =
      get(data, [...path, 'auth']) === 'authorization_code' ? secretKeyProblem(env[SECRET_KEY_ENV]) : undefined;
    if (keyProblem !== undefined)
      add([...path, 'auth'], `authorization_code keeps the refresh token encrypted in PostgreSQL, but ${keyProblem}`);
  }
  const alerts = get(data, ['alerts']);
  for (const name of isObj(alerts) ? Object.keys(alerts) : []) {
    const path = ['alerts', name, 'webhook'];
    if (get(data, path) !== undefined && !writtenAs(path, /\$\{[A-Za-z_]/))
      add(
        path,
        'a webhook URL holds its own credential: write it as ${SLACK_WEBHOOK_URL} (any variable name) and set the ' +
          'variable in the environment',
      );
  }
  const jobs = get(data, ['jobs']);
  for (const [name, job] of Object.entries(isObj(jobs) ? jobs : {})) {
    if (!isObj(job)) continue;
    const path = ['jobs', name];
    if (typeof job.connection === 'string' && known.length > 0 && !known.includes(job.connection)) {
      const near = closestMatch(job.connection, known);
      const hint = near ? `did you mean "${near}"? ` : '';
      add([...path, 'connection'], `unknown connection "${job.connection}" (${hint}known: ${known.join(', ')})`);
    }
    if (typeof job.schedule === 'string') {
      // Our range check first: node-cron reads some numbers out of range as others, and words it "is a invalid".
      const outOfRange = cronRangeProblems(job.schedule);
      const v = outOfRange.length ? { valid: false, errors: [] } : validateDetailed(job.schedule);
      if (!v.valid) {
        const why = outOfRange.length ? outOfRange.join('; ') : v.errors.map((e) => e.message).join('; ');
        add(
          [...path, 'schedule'],
          `invalid cron expression "${job.schedule}": ${why} (5 fields "min hour day month weekday", or 6 with ` +
            'seconds first, e.g. "15 2 * * *")',
        );
      }
    }
    zone([...path, 'timezone'], job.timezone);
    const all = get(job, ['catchup', 'all']);
    if (typeof all === 'string' && parseWindow(all) === undefined)
      add(
        [...path, 'catchup', 'all'],
        `invalid catch-up window "${all}": write a number and a unit s, m, h, d or w, e.g. 30m, 12h, 2d`,
      );
    const report = get(job, ['report', 'name']);
    const checked = typeof report === 'string' && report !== '' ? checkReportName(report) : undefined;
    if (checked && isReportNameProblem(checked)) {
      const what = checked.kind === 'character' ? 'has characters the server rejects' : 'is malformed';
      add(
        [...path, 'report', 'name'],
        `report name "${String(report)}" ${what}: it ${checked.problem} (${checked.howToFix})`,
      );
    }
    const parameters = get(job, ['report', 'parameters']);
    for (const [key, value] of Object.entries(isObj(parameters) ? parameters : {}))
      if (typeof value === 'string')
        for (const text of templateProblems(value)) add([...path, 'report', 'parameters', key], text);
    // A job with many mandants merges by its key and mandant column (docs/loaded-tables.md "Many mandants").
    const listed = Array.isArray(get(job, ['report', 'mandant']));
    const column = get(job, ['target', 'mandantColumn']);
    const mandantColumn = listed ? (typeof column === 'string' ? column : DEFAULT_MANDANT_COLUMN) : undefined;
    for (const p of jobTargetProblems(job.target, targets, mandantColumn)) add([...path, ...p.path], p.text, p.onKey);
  }
  for (const p of sharedTargetProblems(jobs)) add(['jobs', p.job, ...p.path], p.text, false, true);
  return out;
}

/** Every problem of a jobs.yaml text, and what could be parsed of it. */
export interface CheckedText {
  /** The interpolated data. */
  data: unknown;
  /** Sorted by position. */
  problems: Located[];
  /** `${VAR}`-interpolated paths (JSON of the path), for {@link parseCoercing}. */
  interpolated: Set<string>;
}

/** Options of {@link checkConfigText}. */
export interface CheckOptions {
  /** What PostgreSQL holds under the target names, to check `target.key` and `target.columns` against. */
  targets?: TargetCatalogue | undefined;
}

/**
 * Checks jobs.yaml text and collects every problem.
 * @throws ConfigError only when the text cannot be parsed at all (YAML syntax, alias bombs, an empty file)
 */
export function checkConfigText(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: CheckOptions = {},
): CheckedText {
  const lines = new LineCounter();
  // merge: `<<: *template` lets similar jobs share a block (YAML 1.1 merge keys).
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true, merge: true });
  if (doc.errors.length > 0) throw new ConfigError(syntaxProblems(doc.errors, text, lines, file));
  const loc = makeLocator(doc, lines);
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new ConfigError([`${file}: ${coerceError(err).message}`], { cause: err });
  }
  const envProblems: string[] = [];
  const envPaths: ConfigPath[] = [];
  const interpolated = new Set<string>();
  const data = interpolate(raw, env, [], envProblems, file, {
    locate: (p) => {
      const pos = loc.node(p);
      return `${pos.line}:${pos.col}`;
    },
    onInterpolated: (p) => interpolated.add(JSON.stringify(p)),
    onProblem: (p) => envPaths.push(p),
  });
  if (data === null || data === undefined)
    throw new ConfigError([`${file}:1:1: the file is empty: it needs connections and jobs (see the sample jobs.yaml)`]);
  const located: Located[] = envProblems.map((text, i) => ({
    ...loc.node(envPaths[i] ?? []),
    path: envPaths[i] ?? [],
    text,
  }));
  // A value whose variable is missing fails the schema too; its env problem says it all.
  const missingVar = new Set(envPaths.map((p) => formatPath(p)));
  const flagged = new Set<string>();
  located.push(...extraChecks(doc, data, loc, file, flagged, env, options.targets));

  const result = parseCoercing(configSchema, data, [], interpolated);
  const issues: { issue: z.core.$ZodIssue; base: ConfigPath }[] = result.success
    ? []
    : result.error.issues.map((issue) => ({ issue, base: [] }));
  for (const { issue } of [...issues]) {
    // zod skips the value of a record entry whose key is invalid: validate that job on its own.
    if (issue.code === 'invalid_key' && issue.path[0] === 'jobs' && issue.path.length === 2) {
      const base = issue.path as ConfigPath;
      const job = parseCoercing(jobSchema, get(data, base), base, interpolated);
      if (!job.success) issues.push(...job.error.issues.map((i) => ({ issue: i, base })));
    }
  }
  for (const { issue, base } of issues) {
    const where = formatPath([...base, ...(issue.path as ConfigPath)]);
    // Extra checks already said it (unknown connection), or a missing variable explains it.
    if (missingVar.has(where) || (issue.code === 'custom' && flagged.has(where))) continue;
    located.push(...issueProblems(issue, base, data, loc, file));
  }
  located.sort((a, b) => a.line - b.line || a.col - b.col);
  return { data, problems: located, interpolated };
}

/**
 * safeParse, but a numeric text from `${VAR}` where the schema wants a number is converted (in place) and parsed
 * again: `paging: "${PAGING}"` should work.
 */
export function parseCoercing<S extends z.ZodType>(
  schema: S,
  data: unknown,
  base: ConfigPath,
  interpolated: Set<string>,
) {
  const result = schema.safeParse(data);
  if (result.success) return result;
  let changed = false;
  for (const issue of result.error.issues) {
    const path = issue.path as ConfigPath;
    const value = get(data, path);
    const wantsNumber = issue.code === 'invalid_type' && (issue.expected === 'number' || issue.expected === 'int');
    if (
      wantsNumber &&
      interpolated.has(JSON.stringify([...base, ...path])) &&
      typeof value === 'string' &&
      /^-?[0-9]+(\.[0-9]+)?$/.test(value)
    ) {
      (get(data, path.slice(0, -1)) as Record<string | number, unknown>)[path[path.length - 1]!] = Number(value);
      changed = true;
    }
  }
  return changed ? schema.safeParse(data) : result;
}
