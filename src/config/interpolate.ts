/**
 * `${VAR}` interpolation of jobs.yaml string values, never keys (docs/configuration.md "Configuration reference").
 * Problems name the file, path and variable only: never a resolved value, nor the text of a secret-named key.
 */

/** A YAML path as zod and the yaml package spell it: map keys and sequence indexes. */
export type ConfigPath = readonly (string | number)[];

/** What {@link interpolate} tells the caller, and asks it. */
export interface InterpolateHooks {
  /** `line:col` (1-based) of the node at `path`. */
  locate?(path: ConfigPath): string | undefined;
  /** Called for every string value with a `${...}` reference. */
  onInterpolated?(path: ConfigPath): void;
  /** Called once per problem pushed, in order. */
  onProblem?(path: ConfigPath): void;
}

/** Key names whose values are secrets (a webhook URL carries a credential): never echoed in a problem or log. */
export const SECRET_KEY = /secret|token|password|passwd|webhook/i;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The whole value is one `${VAR}` or `${VAR:-default}` reference (how a secret must be written). */
export const WHOLE_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$/;

/** A path for humans: `jobs.sales_orders.report.paging`, `target.key[0]`, `jobs["a b"]`. */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (/^[A-Za-z0-9_-]+$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out === '' ? '(top level)' : out;
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of `value`; `$${` writes a literal `${`. As in the shell,
 * the default applies when VAR is unset or empty.
 * @param path YAML path of `value` (`[]` for the root)
 * @param problems receives `file[:line:col]: yaml.path: what is wrong (how to fix)` per missing VAR without
 *   default or malformed reference
 * @returns a copy of `value`; a missing VAR resolves to ''
 */
export function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: (string | number)[],
  problems: string[],
  file: string,
  hooks: InterpolateHooks = {},
): unknown {
  const walk = (v: unknown, at: (string | number)[]): unknown => {
    if (typeof v === 'string') {
      if (!v.includes('${')) return v;
      hooks.onInterpolated?.(at);
      return interpolateString(v, env, at, problems, file, hooks);
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...at, i]));
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...at, k])]));
  };
  return walk(value, path);
}

/** One reference: `$${` (a literal `${`), or `${…}` up to its `}`, or to the end when it has none. */
const REFERENCE = /\$\$\{|\$\{([^}]*)(\}?)/g;

function interpolateString(
  s: string,
  env: NodeJS.ProcessEnv,
  path: ConfigPath,
  problems: string[],
  file: string,
  hooks: InterpolateHooks,
): string {
  const where = () => {
    const pos = hooks.locate?.(path);
    return `${file}${pos ? `:${pos}` : ''}: ${formatPath(path)}`;
  };
  const secret = path.some((p) => typeof p === 'string' && SECRET_KEY.test(p));
  return s.replace(REFERENCE, (whole, body: string | undefined, close: string | undefined) => {
    if (body === undefined) return '${';
    const sep = body.indexOf(':-');
    const name = sep < 0 ? body : body.slice(0, sep);
    if (!close || !NAME.test(name)) {
      // The reference text is not echoed for secrets: it may be the secret itself, mistyped.
      const shown = secret ? '' : ` near ${JSON.stringify(close ? whole : whole.slice(0, 20))}`;
      hooks.onProblem?.(path);
      problems.push(
        `${where()}: malformed variable reference${shown}: write \${VAR} or \${VAR:-default} (VAR: letters, digits, ` +
          '_), or $${ for a literal "${"',
      );
      return whole;
    }
    const set = env[name];
    if (set !== undefined && (set !== '' || sep < 0)) return set;
    if (sep >= 0) return body.slice(sep + 2);
    hooks.onProblem?.(path);
    const fix = secret ? ' before starting report-etl' : `, or write \${${name}:-default} in the file`;
    problems.push(`${where()}: environment variable ${name} is not set: export ${name}${fix}`);
    return '';
  });
}
