/**
 * A resumable page body (docs/report-export-service.md "Endpoints" #3). Pages are deterministic, so after a break
 * the page is requested again, the bytes already delivered are skipped and the last up-to-64 of them compared with
 * the re-fetched ones: the reader sees every byte exactly once, or a PageBrokenError. A pull Readable: the undici
 * body is read only while the consumer wants more.
 */
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { AbortedError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { PageBrokenError } from './errors.ts';
import { backoffDelayMs, sleep, type RetryPolicy } from '../backoff.ts';
import { isTransientError } from './http.ts';
import type { PageStream } from './types.ts';

/** How many bytes before a cut are compared with the re-fetched page. */
const RESUME_CHECK_BYTES = 64;

interface ResumablePageOptions {
  jobId: string;
  page: number;
  /** The first answer (status 200). */
  first: Dispatcher.ResponseData;
  /** Requests the page again (transient failures retried inside); null on 404. */
  refetch: () => Promise<Dispatcher.ResponseData | null>;
  /** `attempts` bounds the resumes, with the backoff between them. */
  retry: RetryPolicy;
  signal?: AbortSignal | undefined;
  logger: Logger;
}

type Body = Dispatcher.ResponseData['body'];

function contentLengthOf(res: Dispatcher.ResponseData): number | undefined {
  const raw = res.headers['content-length'];
  const n = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw !== undefined && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** A body that ended before its Content-Length: handled like a reset. */
class ShortBodyError extends Error {}

class PageBody extends Readable {
  /** Re-requests so far. */
  resumes = 0;
  private readonly opts: ResumablePageOptions;
  private readonly contentLength: number | undefined;
  private src: Body | undefined;
  private expected: number | undefined;
  /** Offset in the page of the current body's next byte. */
  private pos = 0;
  /** Bytes handed to the consumer. */
  private delivered = 0;
  /** Ends with the last min(64, delivered) bytes delivered; usually a reference to the last chunk (no copy). */
  private recent: Buffer = Buffer.alloc(0);
  /** Copy of the last <= 64 delivered bytes, taken at each resume. */
  private tail: Buffer = Buffer.alloc(0);
  private wanted = false;
  private readonly onReadable = (): void => this.pump();
  private readonly onEnd = (): void => this.ended();
  private readonly onError = (err: Error): void => void this.broke(err);

  constructor(opts: ResumablePageOptions) {
    super({ highWaterMark: 64 * 1024 });
    this.opts = opts;
    this.contentLength = contentLengthOf(opts.first);
    this.attach(opts.first);
  }

  override _read(): void {
    this.wanted = true;
    this.pump();
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    this.detach()?.destroy();
    cb(err);
  }

  private attach(res: Dispatcher.ResponseData): void {
    this.src = res.body;
    this.expected = contentLengthOf(res);
    this.pos = 0;
    res.body.on('readable', this.onReadable);
    res.body.on('end', this.onEnd);
    res.body.on('error', this.onError);
  }

  private detach(): Body | undefined {
    const src = this.src;
    this.src = undefined;
    src?.off('readable', this.onReadable);
    src?.off('end', this.onEnd);
    src?.off('error', this.onError);
    src?.on('error', () => {}); // late errors of a dropped body are of no interest
    return src;
  }

  private pump(): void {
    const src = this.src;
    if (src === undefined) return;
    while (this.wanted) {
      const raw = src.read() as Buffer | null;
      if (raw === null) return; // 'readable' or 'end' follows
      const out = this.accept(raw);
      if (this.src !== src) return; // accept() failed the stream
      if (out !== undefined) this.wanted = this.push(out);
    }
  }

  /** Positions `raw` in the page: skips (and checks) bytes already delivered, returns the new ones. */
  private accept(raw: Buffer): Buffer | undefined {
    const start = this.pos;
    this.pos += raw.length;
    let chunk = raw;
    if (start < this.delivered) {
      const { tail, delivered } = this;
      const tailStart = delivered - tail.length;
      const from = Math.max(start, tailStart);
      const to = Math.min(this.pos, delivered);
      if (
        from < to &&
        !raw.subarray(from - start, to - start).equals(tail.subarray(from - tailStart, to - tailStart))
      ) {
        this.broken(`the re-fetched bytes before offset ${delivered} differ from those already delivered`);
        return undefined;
      }
      if (this.pos <= delivered) return undefined;
      chunk = raw.subarray(delivered - start);
    }
    this.delivered += chunk.length;
    this.recent =
      chunk.length >= RESUME_CHECK_BYTES
        ? chunk
        : Buffer.concat([this.recent.subarray(-RESUME_CHECK_BYTES), chunk]).subarray(-RESUME_CHECK_BYTES);
    return chunk;
  }

  private ended(): void {
    if (this.expected !== undefined && this.pos < this.expected) {
      void this.broke(new ShortBodyError(`body ended after ${this.pos} of ${this.expected} bytes`));
      return;
    }
    if (this.pos < this.delivered) {
      this.broken(`the re-fetched page has ${this.pos} bytes, fewer than the ${this.delivered} already delivered`);
      return;
    }
    this.detach();
    this.push(null);
  }

  private fail(err: Error): void {
    this.detach()?.destroy();
    this.destroy(err);
  }

  private broken(reason: string, cause?: unknown): void {
    this.fail(new PageBrokenError(this.opts.jobId, this.opts.page, reason, cause));
  }

  /** The current body broke: resume (bounded), or fail the stream. */
  private async broke(err: Error): Promise<void> {
    const { jobId, page, retry, signal, logger } = this.opts;
    this.detach()?.destroy();
    if (this.destroyed) return;
    if (signal?.aborted) return this.fail(new AbortedError(signal.reason));
    if (!(isTransientError(err) || err instanceof ShortBodyError)) return this.fail(err);
    if (this.resumes >= retry.attempts)
      return this.broken(`still breaking off after ${this.resumes} resumes (last at byte ${this.delivered})`, err);
    this.resumes++;
    this.tail = Buffer.from(this.recent.subarray(-RESUME_CHECK_BYTES));
    logger.debug(
      { jobId, page, offset: this.delivered, resumes: this.resumes, err: err.message },
      'page broke off; requesting it again',
    );
    let next: Dispatcher.ResponseData | null;
    try {
      await sleep(backoffDelayMs(this.resumes, retry), signal);
      if (this.destroyed) return;
      next = await this.opts.refetch();
    } catch (refetchErr) {
      if (signal?.aborted) return this.fail(new AbortedError(signal.reason));
      return this.broken(`requesting it again failed: ${(refetchErr as Error).message}`, refetchErr);
    }
    if (next === null) return this.broken('the server answered 404 when it was requested again');
    if (this.destroyed) return void next.body.destroy();
    const nextLength = contentLengthOf(next);
    if (this.contentLength !== undefined && nextLength !== undefined && nextLength !== this.contentLength) {
      next.body.destroy();
      return this.broken(`Content-Length changed from ${this.contentLength} to ${nextLength} bytes`);
    }
    this.attach(next);
    this.pump();
  }
}

/**
 * A 200 page answer as a {@link PageStream} whose body resumes after breaks. The body errors with PageBrokenError
 * (too many resumes, page gone, bytes differ, re-fetch failed) or AbortedError.
 */
export function resumablePageStream(opts: ResumablePageOptions): PageStream {
  const body = new PageBody(opts);
  const type = opts.first.headers['content-type'];
  const contentType = (Array.isArray(type) ? type[0] : type) ?? '';
  return {
    page: opts.page,
    contentType,
    contentLength: contentLengthOf(opts.first),
    body,
    resumes: () => body.resumes,
  };
}
