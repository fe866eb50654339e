/**
 * The page server of `npm run bench`: the simulator with SimulatorOptions.pageCache in its own process, so
 * that serving pages (from memory, rendered once beforehand) neither costs the measured worker CPU time in
 * its own event loop nor counts in its RSS. Talks to the parent over IPC:
 * - sends { url } once listening;
 * - { cmd: 'prerender', report, parameters, outputType, paging } → clears the cache, renders every page,
 *   answers { pages, rows, bytes, ms } (documents are not prerendered: the simulator keeps each one once served);
 * - { cmd: 'close' } → stops and exits.
 */
import { startSimulator } from '../../src/simulator/index.ts';

/** A request from bench/run.ts. */
export type PageServerRequest =
  | {
      cmd: 'prerender';
      report: string;
      parameters: Record<string, string>;
      outputType: 'txt' | 'json' | 'json_compact' | 'xml_query' | 'txt_cstr';
      paging: number;
    }
  | { cmd: 'close' };

// argv[2]: latency added to every response, ms (the simulator's latencyMs fault; BENCH_LATENCY).
const sim = await startSimulator({
  pageCache: true,
  jobDurationMs: 0,
  faults: { latencyMs: Number(process.argv[2] ?? 0) },
});
process.on('message', (m: PageServerRequest) => {
  if (m.cmd === 'close') {
    void sim.close().then(() => process.exit(0));
    return;
  }
  sim.clearPageCache();
  const started = performance.now();
  try {
    const r = sim.prerender(m.report, m.parameters, m.outputType, m.paging);
    process.send!({ ...r, ms: performance.now() - started });
  } catch (err) {
    process.send!({ error: String((err as Error).message) });
  }
});
process.send!({ url: sim.url });
