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

/**
 * A table printed while its rows still come (a history of millions of events is never held whole): the
 * header first, then each row, padded to the widths of the header and the first `sample` rows. A longer
 * cell later pushes its row's next cells to the right, never cuts them.
 */
export async function* alignedRows<T>(
  header: string[],
  rows: AsyncIterable<T>,
  cells: (row: T) => string[],
  sample = 1000,
): AsyncGenerator<{ text: string; row?: T }> {
  const first: { row: T; cells: string[] }[] = [];
  const iterator = rows[Symbol.asyncIterator]();
  for (let next = await iterator.next(); ; next = await iterator.next()) {
    if (!next.done) first.push({ row: next.value, cells: cells(next.value) });
    if (next.done || first.length === sample) break;
  }
  const widths = header.map((_, c) => Math.max(header[c]!.length, ...first.map((r) => r.cells[c]!.length)));
  const line = (row: string[]) =>
    row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ');
  yield { text: line(header) };
  for (const { row, cells: text } of first) yield { text: line(text), row };
  if (first.length < sample) return;
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    yield { text: line(cells(next.value)), row: next.value };
  }
}
