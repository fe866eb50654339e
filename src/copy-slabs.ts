/**
 * The memory COPY rows are written into: slabs of {@link SLAB_BYTES} that the page decoders fill with rows
 * (pages/copy-text.ts) and hand out in parts, and that come back to a small free list once the loader has written
 * every part of them to PostgreSQL (warehouse/copy-written.ts), to be filled again.
 *
 * Why: a fresh 1 MiB Buffer per MiB of rows is memory outside V8's heap that only a full mark-compact returns, and
 * V8 answers a steady stream of such allocations with mark-compacts every few MB once a run has lasted a while,
 * each walking the whole heap (docs/architecture.md "Flow of one run": memory stays flat). Reused slabs are
 * allocated once per process.
 *
 * Parts are lent and given back by identity: a part given back twice, or never lent (a view of a page chunk, the
 * binary stream's header), changes nothing, and a part never given back (a preview, a failed load) only keeps its
 * slab from the free list: the garbage collector takes it as before. A slab is reused only after it was retired (its
 * writer moved on to another slab) and every part lent from it came back.
 */

/** Bytes of one slab: big enough that one 64 KiB input chunk's rows fit several times. */
export const SLAB_BYTES = 1 << 20;

/** Slabs kept for reuse at most (beyond it a returning slab is left to the garbage collector), 16 MiB. */
const MAX_FREE = 16;

interface SlabState {
  /** Parts lent and not given back. */
  lent: number;
  /** The writer moved on: the slab is free once `lent` is 0. */
  retired: boolean;
  slab: Buffer;
}

const free: Buffer[] = [];
/** Slabs made and slabs reused since the process started. */
const counts = { made: 0, reused: 0 };
/** Per slab (by its memory), while it is in use. */
const states = new WeakMap<ArrayBufferLike, SlabState>();
/** The parts lent and not given back. */
const lentParts = new WeakSet<Buffer>();

/** A slab to write rows into: a reused one when there is one, else a new one. */
export function takeSlab(): Buffer {
  let slab = free.pop();
  if (slab === undefined) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    counts.made++;
  } else counts.reused++;
  states.set(slab.buffer, { lent: 0, retired: false, slab });
  return slab;
}

/** `part`, a view of a slab from {@link takeSlab}, is handed out: the slab is not reused before it comes back. */
export function lendPart(part: Buffer): void {
  const state = states.get(part.buffer);
  if (state === undefined || lentParts.has(part)) return;
  lentParts.add(part);
  state.lent++;
}

/** The writer of `slab` moves on to another one: `slab` is reused once its parts are back. */
export function retireSlab(slab: Buffer): void {
  const state = states.get(slab.buffer);
  if (state === undefined) return;
  state.retired = true;
  if (state.lent === 0) reuse(state);
}

/** `part` has been written whole (PostgreSQL's socket took it): its bytes are not read again. */
export function givePartBack(part: Buffer): void {
  if (!lentParts.delete(part)) return;
  const state = states.get(part.buffer);
  if (state === undefined) return;
  state.lent--;
  if (state.retired && state.lent === 0) reuse(state);
}

function reuse(state: SlabState): void {
  states.delete(state.slab.buffer);
  if (free.length < MAX_FREE) free.push(state.slab);
}

/** Slabs made and reused since the process started, and on the free list now (for tests and the benchmark). */
export function slabCounts(): { made: number; reused: number; free: number } {
  return { ...counts, free: free.length };
}
