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
