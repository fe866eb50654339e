/** Types of bundle.js (plain JavaScript, documented there). */
export declare const EXTERNAL: readonly string[];
export declare function bundle(root: string, paths?: { from?: string; out?: string }): Promise<void>;
