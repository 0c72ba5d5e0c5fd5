import { withoutSecrets } from '../history/redaction.js';
import type { Output } from './command.js';

/** Text on stdout, or JSON with `--json`. Hashes and sealed secrets are redacted from every JSON output, as the history API redacts them. */
export const printer =
  (json: boolean): Output =>
  (text, value) =>
    console.log(json ? JSON.stringify(withoutSecrets(value), null, 2) : text);

/** Progress on a terminal's stderr, rewritten in place; nothing when stderr is a file or a pipe. */
export const progressLine = (what: string) => {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  return {
    update: (count: number) => {
      if (!tty) return;
      const rate = Math.round(count / Math.max((Date.now() - started) / 1000, 0.001));
      process.stderr.write(`\r${what} ${count} events (${rate}/s)`);
    },
    done: () => {
      if (tty) process.stderr.write('\n');
    },
  };
};

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export const table = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '),
    )
    .join('\n');
};
