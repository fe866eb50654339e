/**
 * Report jobs (docs/report-export-service.md "Job (report session)", "States and transitions"). A job is Running until
 * jobDurationMs after its start, then FinishedSuccess (message rows=<n>;pages=<n>) or FinishedError; a
 * rights failure or an unknown report is FinishedError from the start. Times are epoch ms.
 */
import { randomUUID } from 'node:crypto';
import type { ReportData } from './catalogue.ts';
import type { PageFaultRequest } from './page-faults.ts';
import type { SimulatedOutputType } from './render.ts';
import type { ZonedFormatter } from './time-format.ts';

/** Job states (docs/report-export-service.md "States and transitions"). */
export type JobState = 'Running' | 'FinishedSuccess' | 'FinishedError';

/** A job as the simulator keeps it. */
export interface SimJob {
  id: string;
  clientId: string;
  mandant: string;
  /** folders/name.ext */
  reportPath: string;
  outputType: SimulatedOutputType;
  /** Rows per page, after the "paging below 10 => 10000" rule. */
  paging: number;
  /** Undefined when the report was refused at start (rights, not found). */
  data: ReportData | undefined;
  submittedAt: number;
  startedAt: number;
  /** When the job reaches its finished state. */
  finishAt: number;
  /** Error text of a job that ends FinishedError. */
  error: string | undefined;
  /** Whether the FinishedError answer carries result: [] (rights failure). */
  withResult: boolean;
  /** Content-Length of txt pages already measured, by page. */
  pageLengths: Map<number, number>;
  /** Report, parameters and seed as one string (page-cache.ts dataKey), for the page cache. */
  dataKey: string;
  /** A bad page asked for by SIM_FAULT (page-faults.ts). */
  fault: PageFaultRequest | undefined;
  /** pdf filler bytes per page asked for by PAD_MB. */
  padBytes: number;
  /** Pages rendered whole (documents, faulty pages), kept so that a resumed download gets the same bytes. */
  wholePages: Map<number, Promise<Buffer>>;
}

/** The Job JSON body (docs/report-export-service.md "Job (report session)"). */
export interface JobBody {
  id: string;
  state: JobState;
  message: string;
  submittedAt: string;
  startedAt: string;
  finishedAt?: string;
  result?: unknown[];
}

/** Number of pages: rows / paging rounded up (docs/report-export-service.md "Endpoints" note 1). */
export function pageCount(rows: number, paging: number): number {
  return Math.ceil(rows / paging);
}

/** What a new job needs. */
export interface NewJob {
  clientId: string;
  mandant: string;
  reportPath: string;
  outputType: SimulatedOutputType;
  paging: number;
  data: ReportData | undefined;
  /** Set => the job fails; `immediate` => it is FinishedError already in the start response. */
  error?: { message: string; immediate: boolean; withResult: boolean };
  durationMs: number;
  now: number;
  /** page-cache.ts dataKey of the rows; default ''. */
  dataKey?: string;
  fault?: PageFaultRequest | undefined;
  padBytes?: number;
}

/** Makes a job. */
export function makeJob(n: NewJob): SimJob {
  const immediate = n.error?.immediate ?? false;
  return {
    id: randomUUID(),
    clientId: n.clientId,
    mandant: n.mandant,
    reportPath: n.reportPath,
    outputType: n.outputType,
    paging: n.paging,
    data: n.data,
    submittedAt: n.now,
    startedAt: n.now,
    finishAt: immediate ? n.now : n.now + n.durationMs,
    error: n.error?.message ?? n.data?.failure,
    withResult: n.error?.withResult ?? false,
    pageLengths: new Map(),
    dataKey: n.dataKey ?? '',
    fault: n.fault,
    padBytes: n.padBytes ?? 0,
    wholePages: new Map(),
  };
}

/** The state of a job at `now`. */
export function jobState(job: SimJob, now: number): JobState {
  if (now < job.finishAt) return 'Running';
  return job.error === undefined ? 'FinishedSuccess' : 'FinishedError';
}

/**
 * The Job body at `now`, timestamps in the simulator's zone.
 * @param misreportRows added to the row count the FinishedSuccess message claims (the misreportRows fault; the
 *   extra-row SIM_FAULT takes one more off)
 */
export function jobBody(job: SimJob, now: number, zone: ZonedFormatter, misreportRows = 0): JobBody {
  const state = jobState(job, now);
  const body: JobBody = {
    id: job.id,
    state,
    message: '',
    submittedAt: zone.iso(job.submittedAt),
    startedAt: zone.iso(job.startedAt),
  };
  if (state === 'Running') return body;
  body.finishedAt = zone.iso(job.finishAt);
  if (state === 'FinishedError') {
    body.message = job.error!;
    if (job.withResult) body.result = [];
  } else {
    const rows = Math.max(0, (job.data?.rowCount ?? 0) + misreportRows - (job.fault?.kind === 'extra-row' ? 1 : 0));
    body.message = `rows=${rows};pages=${pageCount(rows, job.paging)}`;
  }
  return body;
}
