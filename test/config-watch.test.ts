import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../src/errors.ts';
import { loadConfig, type LoadedConfig } from '../src/config/load.ts';
import { watchConfig, type ReadOutcome } from '../src/config/watch.ts';
import { watchLiveConfig } from '../src/config/live-config.ts';
import { validateConfigIsolated } from '../src/config/isolate.ts';
import { pino } from 'pino';
import { waitFor } from './support/wait.ts';

const ENV = { WATCH_SECRET: 'w-secret' };

function file(paging: number | string): string {
  return [
    'connections:',
    '  erp:',
    '    baseUrl: https://erp.example.com',
    '    clientId: etl',
    '    clientSecret: ${WATCH_SECRET}',
    'jobs:',
    '  j1:',
    '    connection: erp',
    '    report:',
    '      mandant: 1',
    '      name: Sales/Orders',
    `      paging: ${paging}`,
    '    target:',
    '      table: erp.orders',
    '',
  ].join('\n');
}

/** Collects watcher events and lets a test wait for the next one. */
function recorder() {
  const events: ({ kind: 'change'; c: LoadedConfig } | { kind: 'error'; e: ConfigError })[] = [];
  const push = (ev: (typeof events)[number]) => events.push(ev);
  return {
    events,
    handlers: {
      onChange: (c: LoadedConfig) => push({ kind: 'change', c }),
      onError: (e: ConfigError) => push({ kind: 'error', e }),
    },
    /** The `count`th event, once it came. */
    next: (count: number) => waitFor(`event ${count}`, () => events[count - 1]),
  };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'report-etl-watch-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('watchConfig', () => {
  it('delivers valid changes (also by rename), reports invalid ones, and keeps quiet on identical saves', async () => {
    const path = join(dir, 'jobs.yaml');
    await writeFile(path, file(100));
    let running = await loadConfig(path, ENV);
    const rec = recorder();
    const reads: ReadOutcome[] = [];
    const watcher = watchConfig(
      path,
      {
        onChange: (c) => {
          running = c;
          rec.handlers.onChange(c);
        },
        onError: rec.handlers.onError,
      },
      ENV,
      { debounceMs: 100, onRead: (o) => reads.push(o) },
    );
    try {
      // An editor-style save: write a temporary file, rename it over the original.
      await writeFile(join(dir, '.jobs.yaml.tmp'), file(200));
      await rename(join(dir, '.jobs.yaml.tmp'), path);
      const first = await rec.next(1);
      expect(first.kind).toBe('change');
      expect(running.config.jobs.j1!.report.paging).toBe(200);
      expect(running.path).toBe(path);

      // An invalid in-place change: reported, the running config stays.
      await writeFile(path, file(5));
      const second = await rec.next(2);
      expect(second.kind).toBe('error');
      if (second.kind !== 'error') throw new Error('unreachable');
      expect(second.e).toBeInstanceOf(ConfigError);
      expect(second.e.problems).toEqual([
        `${path}:12:15: jobs.j1.report.paging: paging must be at least 10: ` +
          `below 10 the server silently uses 10000 rows per page`,
      ]);
      expect(running.config.jobs.j1!.report.paging).toBe(200);

      // Saving the same invalid text again is not reported twice: once the watcher has read it, still two events.
      const readsBefore = reads.length;
      await writeFile(path, file(5));
      await waitFor('the watcher read the identical save', () => reads.slice(readsBefore).includes('unchanged'));
      expect(rec.events).toHaveLength(2);

      // Several quick saves are debounced into one delivery of the last text.
      for (const p of [300, 400, 500]) await writeFile(path, file(p));
      const third = await rec.next(3);
      expect(third.kind).toBe('change');
      expect(running.config.jobs.j1!.report.paging).toBe(500);
      expect(rec.events).toHaveLength(3);
    } finally {
      await watcher.close();
    }
    // After close, nothing more arrives: a second watcher of the same file sees the next save, the closed one does
    // not. A second close waits for the first.
    const witness = recorder();
    const second = watchConfig(path, witness.handlers, ENV, { debounceMs: 100 });
    try {
      await writeFile(path, file(600));
      expect((await witness.next(1)).kind).toBe('change');
      expect(rec.events).toHaveLength(3);
    } finally {
      await second.close();
    }
    await watcher.close();
  });

  it('reports a removed file once and recovers when it comes back', async () => {
    const path = join(dir, 'gone.yaml');
    await writeFile(path, file(100));
    const rec = recorder();
    const watcher = watchConfig(path, rec.handlers, ENV, { debounceMs: 100 });
    try {
      await rm(path);
      const first = await rec.next(1);
      expect(first.kind).toBe('error');
      if (first.kind === 'error')
        expect(first.e.problems[0]).toBe(`${path}: cannot read the changed file (ENOENT); keeping the running config`);
      await writeFile(path, file(150));
      const second = await rec.next(2);
      expect(second.kind === 'change' && second.c.config.jobs.j1!.report.paging).toBe(150);
    } finally {
      await watcher.close();
    }
  });
});

describe("a live jobs.yaml that gives a running job's table to a job that writes it otherwise", () => {
  /** `file(paging)` with a second job `j2` writing j1's table erp.orders by merge. */
  const withNewcomer = (paging: number): string =>
    `${file(paging)}  j2:\n    connection: erp\n    report:\n      mandant: 1\n      name: ` +
    `Sales/Returns\n    target:\n      table: erp.orders\n      mode: merge\n      key: [auftrag_nr]\n`;

  it(
    'keeps the running job as it was and skips the newcomer; ' + 'a changed or restarted one is skipped with it',
    async () => {
      const path = join(dir, 'shared.yaml');
      await writeFile(path, file(100));
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
      const live = await watchLiveConfig(path, logger, { env: ENV, debounceMs: 50 });
      try {
        expect(Object.keys(live.current().jobs)).toEqual(['j1']);
        await writeFile(path, withNewcomer(100));
        await waitFor('the newcomer is skipped', () => live.invalid().some((e) => e.name === 'j2'));
        expect(Object.keys(live.current().jobs)).toEqual(['j1']);
        expect(live.invalid().map((e) => e.name)).toEqual(['j2']);
        expect(live.invalid()[0]!.problems[0]).toContain(
          'erp.orders is also the target of job "j1" (mode replace), but this job writes it with mode merge',
        );
        expect(
          lines.some((l) =>
            l.includes('job \\"j1\\" keeps running as it was; the job the change brought for its table is skipped'),
          ),
        ).toBe(true);
        // The running job itself changed: which of the two is meant cannot be told any more, and both are skipped.
        await writeFile(path, withNewcomer(200));
        await waitFor('both are skipped', () => live.invalid().length === 2);
        expect(Object.keys(live.current().jobs)).toEqual([]);
      } finally {
        await live.close();
      }
      // At a start there is no running job to keep: both are skipped, as `validate` reports both.
      const started = validateConfigIsolated(withNewcomer(100), path, ENV);
      expect(started.invalid.map((e) => e.name)).toEqual(['j1', 'j2']);
    },
  );
});
