import { Writable } from 'node:stream';
import { pino } from 'pino';
import { eventually } from './wait.js';

export type LogLine = Record<string, unknown> & { level: number; msg: string };

/**
 * A pino logger that keeps every line, parsed: a test waits for the line that says the service reacted
 * (a file reloaded or refused) rather than sleeping for as long as the reaction might take.
 */
export const captureLogs = (level: pino.Level = 'info') => {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(text) as LogLine);
      done();
    },
  });
  /** The first line with this message, once the service has written it. */
  const waitFor = (msg: string, timeoutMs = 5000) =>
    eventually(
      () => Promise.resolve(lines.find((line) => line.msg === msg)),
      timeoutMs,
      `the log line "${msg}"`,
    );
  return { lines, logger: pino({ level }, stream), waitFor };
};
