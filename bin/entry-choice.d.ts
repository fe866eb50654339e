/** Types of bin/entry-choice.js (plain JavaScript, documented there). */
export function newestMtimeMs(dir: string): number;
export function chooseEntry(root: string, override: string | undefined): { entry: 'dist' | 'sources'; file: string; reason: string };
