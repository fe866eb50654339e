/**
 * Dockerfile and docker-compose.yml, checked by reading them (no Docker engine here): the YAML parses, every
 * service's command exists in the CLI with the options it passes, the environment names are the ones the code
 * reads, ports agree, and the production image (`npm ci --omit=dev`) has every package the sources import.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { allCommands } from '../src/cli/commands.ts';
import { NODE_FLAGS } from '../src/runtime-flags.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(ROOT, p)).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') || p.endsWith('.js') ? [p] : [];
  });
}

async function cliProgram(): Promise<Command> {
  const program = new Command('report-etl');
  const cli = { out: () => undefined, err: () => undefined, exit: () => undefined };
  for (const register of await allCommands()) register(program, cli);
  return program;
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  healthcheck?: { test?: string[]; disable?: boolean };
  volumes?: string[];
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};

/** The value after `flag` in a redis-server command line (`--appendonly yes`), or undefined. */
function redisSetting(command: string[], flag: string): string | undefined {
  const i = command.lastIndexOf(flag);
  return i < 0 ? undefined : command[i + 1];
}
const dockerfile = read('Dockerfile');

describe('docker-compose.yml', () => {
  const ours = Object.entries(compose.services).filter(([, s]) => s.image === 'report-etl:local');

  it('has postgres, redis, the simulator, the scheduler, two workers and the admin server', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'admin',
      'postgres',
      'redis',
      'scheduler',
      'simulator',
      'worker',
    ]);
    expect((compose.services.worker as { deploy?: { replicas?: number } }).deploy?.replicas).toBe(2);
    for (const name of ['postgres', 'redis', 'simulator'])
      expect(compose.services[name]!.healthcheck?.test, name).toBeDefined();
  });

  it('runs only commands and options the CLI has', async () => {
    const program = await cliProgram();
    for (const [name, service] of ours) {
      const [command, ...args] = service.command ?? [];
      const cmd = program.commands.find((c) => c.name() === command);
      expect(cmd, `${name}: report-etl ${command}`).toBeDefined();
      const flags = new Set(cmd!.options.flatMap((o) => [o.long, o.short].filter(Boolean)));
      for (const a of args.filter((x) => x.startsWith('-')))
        expect(flags.has(a), `${name}: ${command} ${a}`).toBe(true);
    }
  });

  it('starts the parts only when what they need is healthy', () => {
    for (const name of ['scheduler', 'worker']) {
      expect(compose.services[name]!.depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        simulator: { condition: 'service_healthy' },
      });
    }
    expect(compose.services.admin!.depends_on?.postgres?.condition).toBe('service_healthy');
  });

  it('sets only environment variables the code or jobs.yaml reads', () => {
    const code = sourceFiles('src').map(read).join('\n') + read('jobs.yaml');
    for (const [name, service] of ours) {
      for (const key of Object.keys(service.environment ?? {})) {
        const used = code.includes(`env.${key}`) || code.includes(`\${${key}`) || code.includes(`'${key}'`);
        expect(used, `${name}: ${key} is read nowhere`).toBe(true);
      }
    }
  });

  it("runs Redis as BullMQ's production guide asks: AOF every second on a named volume, noeviction", () => {
    const redis = compose.services.redis!;
    const command = redis.command ?? [];
    expect(command[0]).toBe('redis-server');
    // Without persistence a Redis restart loses every queued, delayed and retrying run.
    expect(redisSetting(command, '--appendonly')).toBe('yes');
    expect(redisSetting(command, '--appendfsync')).toBe('everysec');
    // Any other policy lets Redis evict BullMQ's keys under memory pressure, which breaks the queue.
    expect(redisSetting(command, '--maxmemory-policy')).toBe('noeviction');
    // The AOF lives in /data (the redis image's working directory): on a named volume it outlives the container.
    const data = (redis.volumes ?? []).map((v) => v.split(':')).find(([, target]) => target === '/data');
    expect(data, 'a volume mounted at /data').toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(data![0]);
  });

  it('points the connection at the simulator service and publishes the admin port it serves on', () => {
    const env = compose.services.scheduler!.environment!;
    expect(env.REPORT_BASE_URL).toContain('http://simulator:8080');
    expect(compose.services.simulator!.command).toEqual(
      expect.arrayContaining(['--port', '8080', '--host', '0.0.0.0']),
    );
    const admin = compose.services.admin!;
    const port = admin.command![admin.command!.indexOf('--port') + 1];
    expect(admin.ports).toEqual([`127.0.0.1:${port}:${port}`]);
    expect(admin.environment!.ADMIN_PORT).toBe(port);
  });
});

describe('Dockerfile', () => {
  it(
    'is multi-stage on node:24-slim, production dependencies only, ' +
      'non-root, the compiled entry, with a /healthz check',
    () => {
      expect(dockerfile.match(/^FROM node:24-slim/gm)).toHaveLength(3);
      expect(dockerfile).toMatch(/^RUN npm run build$/m);
      expect(dockerfile).toMatch(/npm ci --omit=dev/);
      expect(dockerfile).toMatch(/^USER node$/m);
      expect(dockerfile).toMatch(/HEALTHCHECK[\s\S]*\/healthz/);
      expect(dockerfile).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
      for (const path of ['package.json', 'migrations', 'jobs.yaml'])
        expect(dockerfile).toMatch(new RegExp(`^COPY ${path}\\b`, 'm'));
      // The build stage compiles exactly what tsconfig.build.json names.
      expect(dockerfile).toMatch(/^COPY tsconfig.json tsconfig.build.json \.\/$/m);
      expect(dockerfile).toMatch(/^COPY src \.\/src$/m);
    },
  );

  it('compiles in the build stage (all dependencies) and runs the build with the production dependencies alone', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const named = (s: string) => /^\S+ AS (\S+)$/m.exec(s.split('\n')[0]!)?.[1];
    const build = stages.find((s) => named(s) === 'build')!;
    expect(
      build.search(/^RUN npm ci --no-audit --no-fund$/m),
      'npm ci with the dev dependencies (TypeScript)',
    ).toBeGreaterThan(-1);
    expect(build.search(/^RUN npm ci\b/m)).toBeLessThan(build.search(/^RUN npm run build$/m));
    const runtime = stages.at(-1)!;
    expect(named(runtime), 'the last stage is the image').toBeUndefined();
    const modulesFrom = /^COPY --from=(\S+) \/app\/node_modules \.\/node_modules$/m.exec(runtime)?.[1];
    const deps = stages.find((s) => named(s) === modulesFrom);
    expect(deps, `the stage node_modules come from (${modulesFrom})`).toBeDefined();
    expect(deps).toMatch(/^RUN npm ci --omit=dev\b/m);
    // The image holds the build and its launcher (bin/, plain JavaScript), not the sources, and builds nothing itself.
    expect(runtime).not.toMatch(/^COPY (src|tsconfig)/m);
    expect(runtime).not.toMatch(/^RUN /m);
  });

  it('builds with tsc alone: `npm run build` runs no script of its own that the build stage would have to copy', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.build).toBe('tsc -p tsconfig.build.json');
  });

  it("has package.json's prepare script wherever it runs npm ci (npm ci runs `prepare`)", () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    const script = /^node (\S+)$/.exec(pkg.scripts.prepare ?? '')?.[1];
    expect(script, 'prepare is `node <script>`').toBeDefined();
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const installing = stages.filter((s) => /^RUN npm ci\b/m.test(s));
    expect(installing).toHaveLength(2);
    for (const stage of installing) {
      expect(stage.indexOf(`COPY ${script} ./scripts/`), stage.split('\n')[0]).toBeGreaterThan(-1);
      expect(stage.indexOf(`COPY ${script} ./scripts/`)).toBeLessThan(stage.search(/^RUN npm ci\b/m));
    }
  });

  it('runs bin/report-etl.js with the flags of src/runtime-flags.ts, as its shebang does', () => {
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!;
    expect(JSON.parse(entry)).toEqual(['node', ...NODE_FLAGS, 'bin/report-etl.js']);
    expect(dockerfile.split(/^FROM /m).at(-1)).toMatch(/^COPY bin \.\/bin$/m);
    expect(read('bin/report-etl.js').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
  });

  it('the production install has every package the runtime sources import', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const builtins = new Set(builtinModules);
    const missing = new Set<string>();
    for (const file of [...sourceFiles('src'), ...sourceFiles('bin')]) {
      for (const m of read(file).matchAll(
        /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g,
      )) {
        const spec = m[1] ?? m[2]!;
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (!(name in pkg.dependencies)) missing.add(`${name} (${file})`);
      }
    }
    expect([...missing]).toEqual([]);
  });
});
