/**
 * Text from a source report-etl does not control (the server's error text, report names, values) made safe for a
 * terminal, so that it cannot move the cursor, recolour, retitle or clear it (docs/architecture.md "Errors").
 */

// CSI, OSC and two-byte escapes; then every other C0 control but tab and line feed, DEL, and the C1 controls, which
// some terminals obey as well.
// eslint-disable-next-line no-control-regex -- finding control characters is what this file is for
const ESCAPES = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g;
// eslint-disable-next-line no-control-regex -- finding control characters is what this file is for
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` without control characters and escape sequences; line breaks (\n) and tabs kept. */
export function terminalSafe(text: string): string {
  return text.replace(ESCAPES, '').replace(/\r\n/g, '\n').replace(CONTROLS, '');
}
