/** Small node:http helpers of the simulator: bodies, JSON answers, problem+json answers. */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Headers every {report_api} answer carries (docs/report-export-service.md "Endpoints": common to report_api calls).
 */
export const REPORT_API_HEADERS = { 'Cache-Control': 'no-store', 'Access-Control-Allow-Origin': '*' } as const;

/** Thrown by {@link readBody} when the body exceeds the limit. */
export class BodyTooLargeError extends Error {}

/**
 * Reads a request body.
 * @param limit most bytes accepted (default 1 MiB)
 * @throws BodyTooLargeError over the limit
 */
export async function readBody(req: IncomingMessage, limit = 1_048_576): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLargeError(`request body over ${limit} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts);
}

/** Answers with a complete body (Content-Length set). */
export function send(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | Buffer = '',
): void {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  res.writeHead(status, { ...headers, 'Content-Length': String(buf.length) });
  res.end(buf);
}

/** Answers JSON; `contentType` defaults to application/json. */
export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
  contentType = 'application/json',
): void {
  send(res, status, { ...headers, 'Content-Type': contentType }, JSON.stringify(value));
}

/**
 * Answers application/problem+json (docs/report-export-service.md "Error problem body"; also our choice for answers the
 * service's description does not show).
 */
export function sendProblem(
  res: ServerResponse,
  status: number,
  problem: { title: string; detail?: string; type?: string; instance?: string },
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { status, ...problem }, headers, 'application/problem+json');
}
