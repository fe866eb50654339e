// Plain JavaScript on purpose: this runs before any TypeScript is loaded, on whatever Node.js the user has, so that
// a Node.js that cannot strip types says what to do instead of failing with ERR_UNKNOWN_FILE_EXTENSION.

/** The oldest Node.js that runs the TypeScript sources directly (type stripping on by default): [major, minor]. */
export const MIN_NODE = [22, 18];

/**
 * What is wrong with this Node.js for report-etl, as one line for stderr, or undefined when it will do.
 * Needs >= 22.18 (README "Quick start", package.json `engines`); also refuses a Node.js whose type stripping is
 * off (`process.features.typescript` false: 23.0-23.5, or --no-experimental-strip-types).
 * @param {string} version e.g. process.versions.node, "22.17.1"
 * @param {string | boolean | undefined} typescript process.features.typescript ('strip', 'transform', false, or
 *   undefined on Node.js older than 22.10)
 * @returns {string | undefined}
 */
export function nodeVersionProblem(version, typescript) {
  const [major, minor] = String(version).split('.').map(Number);
  const tooOld = !(major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]));
  if (!tooOld && typescript !== false) return undefined;
  const what = tooOld ? `this is Node.js ${version}` : `Node.js ${version} does not strip types here (23.0 to 23.5, or --no-experimental-strip-types)`;
  const fix = `after \`npm ci\`, use \`npx report-etl ...\` or \`npm run report-etl -- ...\` (they run the Node.js 24 that \`npm ci\` installs), or install Node.js >= ${MIN_NODE.join('.')}`;
  return `Node.js >= ${MIN_NODE.join('.')} is needed to run the TypeScript sources, ${what}: ${fix}`;
}
