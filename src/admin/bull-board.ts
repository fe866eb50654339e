/**
 * bull-board, the BullMQ dashboard, at `/admin/queues`: job lists per state, job data and errors, read only. Its
 * retry, promote, clean and remove buttons (one job, or "all" of a state) would go around report-etl's own rules — a
 * retry of a superseded failure overwrites newer rows, a cleaned queue job frees its tick's id for a second run —, so
 * failed runs are replayed from report-etl's run pages or `report-etl replay`, which apply them. Links lead back to
 * the jobs overview and the run history. Mounted as an encapsulated fastify plugin; the server's onRequest hook
 * guards it like every other `/admin` path.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

/** Where the dashboard is served. */
export const BULL_BOARD_PATH = '/admin/queues';

/**
 * Registers bull-board for `queue` on `app` under {@link BULL_BOARD_PATH}, read only.
 * Resolves when the plugin is registered.
 */
export async function registerBullBoard(app: FastifyInstance, queue: Queue): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(queue, { allowRetries: false, readOnlyMode: true, displayName: 'report-etl runs' })],
    // @bull-board/fastify 9.10.1 bundles its own @bull-board/api 9.10.1 typings beside our 9.10.2; same interface.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: { uiConfig: { boardTitle: 'report-etl', miscLinks: [{ text: 'Jobs overview', url: '/admin' }, { text: 'Run history', url: '/admin/runs' }] } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
}
