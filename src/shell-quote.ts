/**
 * A word for a command line we print for someone to paste into a POSIX shell: as it is when it holds only
 * characters no shell treats specially, else in single quotes (a quote inside written as '\'').
 */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
