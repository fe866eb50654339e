// Plain JavaScript on purpose: this runs before anything else is loaded, on whatever Node.js the user has, so that an
// old Node.js says what to do instead of failing on syntax or an export it lacks.

/** The oldest Node.js major that runs report-etl's build (package.json `engines`). */
export const MIN_NODE_MAJOR = 22;

/**
 * What is wrong with this Node.js for report-etl, as one line for stderr, or undefined when it will do.
 * @param {string} version e.g. process.versions.node, "20.20.2"
 * @returns {string | undefined}
 */
export function nodeVersionProblem(version) {
  const major = Number(String(version).split('.')[0]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return (
    `Node.js >= ${MIN_NODE_MAJOR} is needed, this is Node.js ${version}: after \`npm ci\`, ` +
    `use \`npx report-etl ...\` or ` +
    '`npm run report-etl -- ...` (they run the Node.js 24 that `npm ci` installs), or install Node.js 24'
  );
}
