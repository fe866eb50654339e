/** Types of node-version.js (plain JavaScript, so that it runs on any Node.js); see there. */
export declare const MIN_NODE_MAJOR: number;
/** One line saying what is wrong with this Node.js for report-etl, or undefined when it will do. */
export declare function nodeVersionProblem(version: string): string | undefined;
