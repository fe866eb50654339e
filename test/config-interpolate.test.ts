import { describe, expect, it } from 'vitest';
import { interpolate, formatPath } from '../src/config/interpolate.ts';

function run(value: unknown, env: NodeJS.ProcessEnv) {
  const problems: string[] = [];
  const paths: string[] = [];
  const out = interpolate(value, env, [], problems, 'jobs.yaml', { onInterpolated: (p) => paths.push(formatPath(p)) });
  return { out, problems, paths };
}

describe('interpolate', () => {
  it('replaces ${VAR} and ${VAR:-default} in nested strings, leaving other scalars alone', () => {
    const { out, problems, paths } = run(
      { a: 'x-${A}-y', list: ['${B:-bee}', 3, true, null], deep: { c: '${C:-}', d: 'plain $ and $A' } },
      { A: 'alpha' },
    );
    expect(out).toEqual({ a: 'x-alpha-y', list: ['bee', 3, true, null], deep: { c: '', d: 'plain $ and $A' } });
    expect(problems).toEqual([]);
    expect(paths).toEqual(['a', 'list[0]', 'deep.c']);
  });

  it('uses the default when the variable is empty, an empty value when no default is given', () => {
    expect(run(['${E:-dflt}', '${E}'], { E: '' })).toMatchObject({ out: ['dflt', ''], problems: [] });
  });

  it('writes $${ as a literal ${ and does not resolve what follows', () => {
    expect(run('cost $${PRICE} / ${P}', { P: '1', PRICE: 'leak' }).out).toBe('cost ${PRICE} / 1');
    // a lone $ stays; the $${ after it is the escape
    expect(run('$$${P}', { P: 'v' }).out).toBe('$${P}');
  });

  it('names file, path and variable of every missing variable', () => {
    const problems: string[] = [];
    interpolate({ jobs: { a: { report: { name: '${R1}/${R2}' } } } }, {}, [], problems, 'cfg/jobs.yaml', {
      locate: () => '7:13',
    });
    expect(problems).toEqual([
      'cfg/jobs.yaml:7:13: jobs.a.report.name: environment variable R1 is not set: export R1, ' +
        'or write ${R1:-default} in the file',
      'cfg/jobs.yaml:7:13: jobs.a.report.name: environment variable R2 is not set: export R2, ' +
        'or write ${R2:-default} in the file',
    ]);
  });

  it('reports malformed references, without quoting values of secret-named keys', () => {
    const problems: string[] = [];
    interpolate(
      { host: 'http://${HOST', clientSecret: '${1abc}xyz', t: '${}' },
      {},
      ['connections', 'c'],
      problems,
      'j.yaml',
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toBe(
      'j.yaml: connections.c.host: malformed variable reference near "${HOST": write ${VAR} or ${VAR:-default} ' +
        '(VAR: letters, digits, _), or $${ for a literal "${"',
    );
    expect(problems[1]).toMatch(/^j\.yaml: connections\.c\.clientSecret: malformed variable reference: write/);
    expect(problems[1]).not.toContain('1abc');
    expect(problems[2]).toMatch(/^j\.yaml: connections\.c\.t: malformed variable reference near "\$\{\}"/);
  });

  it('does not modify its input', () => {
    const input = { a: '${A}' };
    run(input, { A: 'x' });
    expect(input).toEqual({ a: '${A}' });
  });
});
