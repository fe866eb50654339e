/**
 * Whether a load may use COPY binary format, as far as the target's columns decide it: every column type has an
 * encoding (format.ts), and timestamps' zone offsets agree with PostgreSQL's (zone-check.ts). The load adds its own
 * conditions (warehouse/copy-load.ts).
 */
import type { Queryable } from '../db.ts';
import { BINARY, binaryEncodingOf, type BinaryEncoding } from './format.ts';
import { zoneAgreesWithDatabase } from './zone-check.ts';

/** Why a load cannot use binary format (for the log), or the encodings it would use. */
export type BinaryChoice =
  | { encodings: BinaryEncoding[] }
  | { refused: 'a column type without a binary encoding' | 'the zone offsets disagree' };

/** Chooses the binary encodings of a load's target columns, or says why there are none. Synchronous. */
export type BinaryChooser = (types: readonly string[]) => BinaryChoice;

/**
 * Prepares the choice for a load into columns of `targetTypes`: the zone check is asked now (when one of them is a
 * timestamp), so that the choice, made once the report's columns are known, needs no more of PostgreSQL.
 * @param timezone the load session's TimeZone: the zone of timestamps written without offset
 * @throws the zone check's query error
 */
export async function binaryChooser(
  db: Queryable,
  targetTypes: readonly string[],
  timezone: string,
): Promise<BinaryChooser> {
  const zoneAgrees = targetTypes.some((t) => binaryEncodingOf(t) === BINARY.timestamptz)
    ? await zoneAgreesWithDatabase(db, timezone)
    : true;
  return (types) => {
    const encodings: BinaryEncoding[] = [];
    for (const t of types) {
      const e = binaryEncodingOf(t);
      if (e === undefined) return { refused: 'a column type without a binary encoding' };
      encodings.push(e);
    }
    if (encodings.includes(BINARY.timestamptz) && !zoneAgrees) return { refused: 'the zone offsets disagree' };
    return { encodings };
  };
}
