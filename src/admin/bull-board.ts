/**
 * bull-board, the BullMQ dashboard, at `/admin/queues`: job lists per state, job
 * data and errors, and the retry / promote / clean buttons of its default UI. Mounted as an encapsulated fastify
 * plugin; the server's onRequest hook guards it like every other `/admin` path.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

/** Where the dashboard is served. */
export const BULL_BOARD_PATH = '/admin/queues';

/**
 * Registers bull-board for `queue` on `app` under {@link BULL_BOARD_PATH}, with retries allowed.
 * Resolves when the plugin is registered.
 */
export async function registerBullBoard(app: FastifyInstance, queue: Queue): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(queue, { allowRetries: true, readOnlyMode: false, displayName: 'report-etl runs' })],
    // @bull-board/fastify 9.10.1 bundles its own @bull-board/api 9.10.1 typings beside our 9.10.2; same interface.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: { uiConfig: { boardTitle: 'report-etl', miscLinks: [{ text: 'Run history', url: '/admin/runs' }] } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
}
