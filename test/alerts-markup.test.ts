/**
 * The server's words in a chat message show as written: Slack's markup characters are escaped (no `<!channel>` ping,
 * no disguised link), and the Teams card carries them in RichTextBlocks, which render no Markdown.
 */
import { expect, it } from 'vitest';
import { alertBody, escapeSlack, type AlertMessage } from '../src/alerts/alert-message.ts';

const hostile: AlertMessage = {
  event: 'failed',
  job: 'sales_orders_daily',
  at: '2026-11-24T02:15:00Z',
  runKey: 'sales_orders_daily__20261124T021500Z',
  errorKind: 'REPORT_FAILED',
  error: '<!channel> see <https://evil.example|Click here> & [Click here](https://evil.example) **now**',
};

it('escapes &, < and > for Slack, so that nothing pings or links', () => {
  expect(escapeSlack('<!channel> a & b <https://x|y>')).toBe('&lt;!channel&gt; a &amp; b &lt;https://x|y&gt;');
  const { text } = alertBody(hostile, 'slack') as { text: string };
  expect(text).not.toMatch(/<|>/);
  expect(text).toContain('&lt;!channel&gt; see &lt;https://evil.example|Click here&gt; &amp;');
});

it("puts every text of the Teams card in RichTextBlocks (no Markdown), the server's words unchanged", () => {
  const body = alertBody(hostile, 'teams') as {
    attachments: { content: { version: string; body: { type: string; inlines: { text: string }[] }[] } }[];
  };
  const card = body.attachments[0]!.content;
  expect(card.version).toBe('1.4');
  expect(card.body.map((b) => b.type)).toEqual(Array(card.body.length).fill('RichTextBlock'));
  const texts = card.body.flatMap((b) => b.inlines.map((i) => i.text));
  expect(texts[0]).toContain('[Click here](https://evil.example) **now**');
  expect(texts).toContain('sales_orders_daily');
});

it('gives every body the same stable id for the same event, job, run and attempt, and another for another', () => {
  const ids = (m: AlertMessage) =>
    (['generic', 'slack', 'teams'] as const).map((f) => (alertBody(m, f) as { id?: unknown }).id);
  const [id] = ids(hostile);
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  expect(ids(hostile)).toEqual([id, id, id]);
  // Sent again later (after a kill -9): the same id, whatever the time or the texts.
  expect(ids({ ...hostile, at: '2026-11-24T03:00:00Z', error: 'other words' })[0]).toBe(id);
  for (const other of [
    { ...hostile, attemptId: 'a2' },
    { ...hostile, event: 'login_required' as const },
    { ...hostile, runKey: 'sales_orders_daily__20261125T021500Z' },
    { ...hostile, job: 'other' },
  ])
    expect(ids(other)[0]).not.toBe(id);
  // A job stale since another success is another alert.
  const stale: AlertMessage = { event: 'stale', job: 'j', at: hostile.at, lastSuccessAt: '2026-11-20T00:00:00Z' };
  expect(ids(stale)[0]).not.toBe(ids({ ...stale, lastSuccessAt: '2026-11-23T00:00:00Z' })[0]);
});

it("prints the times of its texts as every command does: in the job's zone with its offset, else UTC marked Z", () => {
  const failed: AlertMessage = {
    ...hostile,
    error: 'Division by zero',
    request: {
      logicalStart: '2026-11-23T01:15:00.000Z',
      logicalEnd: '2026-11-24T01:15:00.000Z',
      tick: '2026-11-24T01:15:00.000Z',
    },
  };
  const slack = (m: AlertMessage, zone?: string) => (alertBody(m, 'slack', zone) as { text: string }).text;
  expect(slack(failed, 'Europe/Zurich')).toContain('interval: (2026-11-23 02:15:00+01:00, 2026-11-24 02:15:00+01:00]');
  expect(slack(failed)).toContain('interval: (2026-11-23 01:15:00Z, 2026-11-24 01:15:00Z]');
  const stale: AlertMessage = {
    event: 'stale',
    job: 'j',
    at: '2026-11-24T12:00:00.000Z',
    freshness: '26h',
    lastSuccessAt: '2026-11-23T01:16:40.123Z',
  };
  expect(slack(stale, 'Europe/Zurich')).toContain('(last success 2026-11-23 02:16:40+01:00)');
  const card = alertBody(stale, 'teams', 'Europe/Zurich') as {
    attachments: { content: { body: { inlines: { text: string }[] }[] } }[];
  };
  const texts = card.attachments[0]!.content.body.map((b) => b.inlines.map((i) => i.text).join(''));
  expect(texts).toContain('last success: 2026-11-23 02:16:40+01:00');
  const recovered: AlertMessage = { event: 'recovered', job: 'j', at: stale.at, failingSince: stale.lastSuccessAt };
  const generic = alertBody(recovered, 'generic') as { summary: string; at: string; failingSince: string };
  expect(generic.summary).toContain('after failures since 2026-11-23 01:16:40Z');
  // The fields for machines stay ISO 8601 UTC.
  expect(generic.at).toBe('2026-11-24T12:00:00.000Z');
  expect(generic.failingSince).toBe('2026-11-23T01:16:40.123Z');
});
