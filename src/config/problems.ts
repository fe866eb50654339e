/**
 * Problem texts for jobs.yaml: positions from the parsed document, zod issues as "what is wrong and how to fix it",
 * YAML syntax errors without quoting the file. No problem text holds the value of a secret-named key.
 */
import type { Document, LineCounter, Node, YAMLError } from 'yaml';
import { isMap, isScalar } from 'yaml';
import type { z } from 'zod';
import { formatPath, SECRET_KEY, type ConfigPath } from './interpolate.ts';
import { optionsAt, schemaAt, typeText } from './reference.ts';
import { closestMatch } from '../closest-match.ts';

/** A problem text with the position it sorts by. */
export interface Located {
  line: number;
  col: number;
  text: string;
  /** What it is about (absent for syntax problems); isolation attributes problems by it. */
  path?: ConfigPath;
  /** target-checks.ts sharedTargetProblems: a running job may keep running despite it (isolate.ts). */
  sharedTarget?: true;
}

export const isObj = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The value at `path` in plain data, or undefined. */
export function get(data: unknown, path: ConfigPath): unknown {
  let v = data;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

/** Finds line:col (1-based) of the node at `path`, else of its nearest parent that exists. */
export function makeLocator(doc: Document, lines: LineCounter) {
  const at = (offset: number) => lines.linePos(offset);
  const nodeAt = (path: ConfigPath): Node | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as Node | undefined;
      if (node?.range) return node;
    }
    return undefined;
  };
  const node = (path: ConfigPath) => {
    const n = nodeAt(path);
    return n?.range ? at(n.range[0]) : { line: 1, col: 1 };
  };
  return {
    node,
    /** Position of a map key (for unknown or badly named keys). */
    key: (path: ConfigPath, key: string) => {
      const map = doc.getIn(path, true);
      if (isMap(map)) {
        const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
        if (pair && isScalar(pair.key) && pair.key.range) return at(pair.key.range[0]);
      }
      return node(path);
    },
  };
}

/** Positions of nodes and map keys in one parsed document. */
export type Locator = ReturnType<typeof makeLocator>;

/** The problem `text` about `path`, at `pos` (default: its node): `file:line:col: yaml.path: text`. */
export function problemAt(loc: Locator, file: string, path: ConfigPath, text: string, pos = loc.node(path)): Located {
  return { ...pos, path, text: `${file}:${pos.line}:${pos.col}: ${formatPath(path)}: ${text}` };
}

/** Turns one zod issue into problems positioned on the YAML node (or its parent). */
export function issueProblems(
  issue: z.core.$ZodIssue,
  base: ConfigPath,
  data: unknown,
  loc: Locator,
  file: string,
): Located[] {
  const path = [...base, ...(issue.path as (string | number)[])];
  const here = (p: ConfigPath, text: string, pos?: { line: number; col: number }) => problemAt(loc, file, p, text, pos);
  const key = path[path.length - 1];
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((k) => {
      const allowed = optionsAt(path);
      const near = closestMatch(k, allowed);
      const hint = near ? `did you mean "${near}"?` : `allowed: ${allowed.join(', ')}`;
      return here([...path, k], `unknown key "${k}" (${hint})`, loc.key(path, k));
    });
  if (issue.code === 'invalid_key') {
    const why = issue.issues.map((i) => i.message).join('; ');
    return [here(path, `bad name "${String(key)}": ${why}`, loc.key(path.slice(0, -1), String(key)))];
  }
  const node = schemaAt(path);
  const about = node?.description ? ` (${node.description.replace(/\.$/, '')})` : '';
  const got = get(data, path);
  const text = ((): string => {
    if ((issue.code === 'invalid_type' || issue.code === 'invalid_union') && got === undefined)
      return `missing required key "${String(key)}"${about}`;
    switch (issue.code) {
      case 'invalid_type': {
        const gotText =
          got === null ? 'null' : Array.isArray(got) ? 'a list' : typeof got === 'object' ? 'a map' : `a ${typeof got}`;
        return `expected ${node ? typeText(node) : issue.expected}, got ${gotText}${about}`;
      }
      case 'invalid_value': {
        const secret = path.some((p) => typeof p === 'string' && SECRET_KEY.test(p));
        const allowed = issue.values.map((v) => String(v)).join(' | ');
        const near = !secret && typeof got === 'string' ? closestMatch(got, issue.values.map(String)) : undefined;
        const hint = near ? ` (did you mean "${near}"?)` : '';
        return `${secret ? '' : `${JSON.stringify(got)} `}is not allowed${hint}: write one of ${allowed}`;
      }
      case 'invalid_union':
        return `invalid value: expected ${node ? typeText(node) : 'another value'}${about}`;
      case 'too_small':
      case 'too_big': {
        // zod's own wording ("Too small: expected ...") is replaced; a schema's custom message is kept.
        if (!/^Too (small|big)/.test(issue.message)) return issue.message;
        const limit = issue.code === 'too_small' ? issue.minimum : issue.maximum;
        if (issue.origin === 'string' && issue.code === 'too_small' && Number(limit) === 1) return 'must not be empty';
        const unit = issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' entries' : '';
        return `must be ${issue.code === 'too_small' ? 'at least' : 'at most'} ${String(limit)}${unit}${about}`;
      }
      case 'invalid_format':
        return issue.format === 'url' && /^Invalid/i.test(issue.message)
          ? 'not a valid URL: write it with its scheme, e.g. https://erp.example.com'
          : issue.message;
      default:
        return issue.message;
    }
  })();
  return [here(path, text)];
}

const MAX_SYNTAX_PROBLEMS = 10;

/**
 * YAML syntax errors as problems: the first line of yaml's message without quoted source (the file may hold a
 * secret). One error cascades into many: only the first ten are kept.
 */
export function syntaxProblems(errors: readonly YAMLError[], text: string, lines: LineCounter, file: string): string[] {
  const out = errors.slice(0, MAX_SYNTAX_PROBLEMS).map((e) => {
    const pos = e.linePos?.[0] ?? lines.linePos(e.pos[0]);
    const what = e.message
      .split('\n')[0]!
      .replace(/ at line \d+, column \d+:?$/, '')
      .replace(/:?\s*"(?:[^"\\]|\\.)*"/g, '');
    const start = lines.lineStarts[pos.line - 1] ?? 0;
    const line = text.slice(start, text.indexOf('\n', start) >>> 0);
    const hint =
      /\$\{/.test(line) && /[{[]/.test(line.replace(/\$\{[^}]*\}/g, ''))
        ? ' (inside { } or [ ], write values that use ${VAR} in quotes: "${VAR}")'
        : '';
    return `${file}:${pos.line}:${pos.col}: YAML syntax error: ${what}${hint}`;
  });
  if (errors.length > MAX_SYNTAX_PROBLEMS)
    out.push(
      `${file}: ${errors.length - MAX_SYNTAX_PROBLEMS} more YAML syntax errors follow from the ones above; ` +
        'fix those first',
    );
  return out;
}
