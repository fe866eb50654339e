/** Report names (docs/report-export-service.md "Report naming rules"): validation and encoding, no server needed. */
import { describe, expect, it } from 'vitest';
import { encodeReportName, ReportNameError } from '../src/report-api/index.ts';

function failure(name: string, job?: string): ReportNameError {
  try {
    encodeReportName(name, 'slash', { job });
  } catch (err) {
    if (err instanceof ReportNameError) return err;
    throw err;
  }
  throw new Error(`"${name}" was accepted`);
}

describe('encodeReportName', () => {
  it.each([
    ['Empty', 'slash', 'Empty.avw'],
    ['Sales/Orders', 'slash', 'Sales%2FOrders.avw'],
    ['Sales/Orders', 'backslash', 'Sales%5COrders.avw'],
    ['Finance/Ledger.avx', 'slash', 'Finance%2FLedger.avx'],
    ['Sub/Deep/Nested Report', 'slash', 'Sub%2FDeep%2FNested%20Report.avw'],
    ['My Folder/a_B 9', 'backslash', 'My%20Folder%5Ca_B%209.avw'],
  ] as const)('%s (%s) -> %s', (name, enc, expected) => {
    expect(encodeReportName(name, enc)).toBe(expected);
  });

  it('names the job, the bad character, its position and how to fix it', () => {
    const err = failure('Sales/Ordérs', 'sales_orders');
    expect(err.code).toBe('REPORT_NAME_INVALID');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('job "sales_orders"');
    expect(err.message).toContain('"é" (U+00E9) at position 10');
    expect(err.message).toContain('A-Z a-z 0-9 _ and space');
    expect(err.details).toMatchObject({ job: 'sales_orders', character: 'é', position: 10, segment: 'Ordérs' });
  });

  it.each([
    ['Sales-Orders', '"-"', 1 + 5],
    ['Sales\\Orders', '"\\"', 6],
    ['a.b/Orders', '"."', 2],
    ['Re.port.avx', '"."', 3],
    ['Sales/Orders?x', '"?"', 13],
    ['Ümlaut', '"Ü"', 1],
  ])('rejects %s at %s position %i', (name, char, position) => {
    const err = failure(name);
    expect(err.message).toContain(`${char} (U+`);
    expect(err.details?.position).toBe(position);
  });

  it.each(['', '/Orders', 'Sales//Orders', 'Sales/', 'Orders.', 'Orders.a-b', '.avx'])(
    'rejects the malformed name %j',
    (name) => {
      expect(failure(name).code).toBe('REPORT_NAME_INVALID');
    },
  );
});
