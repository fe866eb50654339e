/**
 * Rows decoded ahead of their consumer: a direct replace decodes its first rows while PostgreSQL deletes the old ones
 * (copy-load.ts).
 */

/**
 * Starts pulling `rows` now, into memory up to about `maxBytes`, until the one consumer of the returned iterable
 * starts: it gets what was pulled, then the rest as it pulls. A failure while reading ahead is thrown to that
 * consumer, never unhandled.
 */
export function readAhead(rows: AsyncIterable<Buffer>, maxBytes: number): AsyncIterable<Buffer> {
  const it = rows[Symbol.asyncIterator]();
  const held: Buffer[] = [];
  let consuming = false;
  let ended = false;
  let failure: { err: unknown } | undefined;
  const pumped = (async () => {
    for (let bytes = 0; !consuming && bytes < maxBytes;) {
      const r = await it.next();
      if (r.done) {
        ended = true;
        return;
      }
      held.push(r.value);
      bytes += r.value.length;
    }
  })().catch((err: unknown) => {
    failure = { err };
  });
  return {
    async *[Symbol.asyncIterator]() {
      consuming = true;
      try {
        await pumped;
        if (failure) throw failure.err;
        for (let k = 0; k < held.length; k++) yield held[k]!;
        held.length = 0;
        if (ended) return;
        for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
      } finally {
        await it.return?.();
      }
    },
  };
}
