/**
 * bull-board, the BullMQ dashboard, at `/admin/queues`, read only: its retry, promote, clean and remove buttons would
 * go around report-etl's own rules (a retry of a superseded failure overwrites newer rows, a cleaned queue job frees
 * its tick's id for a second run), so failed runs are replayed from the run pages or `report-etl replay`. Guarded by
 * the server's onRequest hook like every other `/admin` path.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

/** Where the dashboard is served. */
export const BULL_BOARD_PATH = '/admin/queues';

/** The link back to report-etl's pages that every bull-board page shows, outside bull-board's own app root. */
const BACK_LINK =
  '<a id="report-etl-back" href="/admin" style="position:fixed;right:1rem;bottom:1rem;z-index:10000;' +
  'background:#fff;color:#0969da;padding:.4rem .8rem;border-radius:.4rem;font:600 14px system-ui,sans-serif;' +
  'box-shadow:0 1px 6px rgba(0,0,0,.35)">← report-etl jobs overview</a>';

/** `<link>` elements of bull-board's page that point at another host. */
const OUTSIDE_LINKS = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>/g;

/**
 * Registers bull-board for `queue` on `app` under {@link BULL_BOARD_PATH}, with a link back on every page.
 * @param timeZone the zone bull-board shows its times in, with their UTC offset, rather than the browser's
 */
export async function registerBullBoard(app: FastifyInstance, queue: Queue, timeZone = 'UTC'): Promise<void> {
  const time = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' } as const;
  const zoned = (o: Intl.DateTimeFormatOptions) => ({ timeZone, timeZoneName: 'shortOffset', ...o, ...time }) as const;
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(queue, { allowRetries: false, readOnlyMode: true, displayName: 'report-etl runs' })],
    // @bull-board/fastify 9.10.1 bundles its own @bull-board/api 9.10.1 typings beside our 9.10.2; same interface.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: {
      uiConfig: {
        boardTitle: 'report-etl',
        miscLinks: [
          { text: 'Jobs overview', url: '/admin' },
          { text: 'Run history', url: '/admin/runs' },
        ],
        dateFormats: {
          short: zoned({}),
          common: zoned({ month: 'short', day: 'numeric' }),
          full: zoned({ year: 'numeric', month: 'short', day: 'numeric' }),
        },
      },
    },
  });
  await app.register(
    async (scope) => {
      // Its page renders into #root: the link goes beside it. Its web fonts from an outside host are dropped (the
      // admin pages load nothing from elsewhere: a visitor's address is nobody else's business, and an offline
      // installation waits for nothing); the system's fonts stand in.
      scope.addHook('onSend', async (_req, reply, payload) => {
        const type = String(reply.getHeader('content-type') ?? '');
        if (typeof payload !== 'string' || !type.startsWith('text/html')) return payload;
        return payload.replace(OUTSIDE_LINKS, '').replace('<div id="root">', `${BACK_LINK}<div id="root">`);
      });
      await scope.register(serverAdapter.registerPlugin());
    },
    { prefix: BULL_BOARD_PATH },
  );
}
