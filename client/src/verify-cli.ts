#!/usr/bin/env node
import { historyReportText, verifyHistoryFile } from './verify-history-file.js';
import { HistoryFormatError } from './verify-history.js';

/*
 * `npx @observation-service/client verify history.ndjson [--json]`: verifies a downloaded history
 * (docs/auditors.md). Exit codes as `obs audit verify`: 0 intact, 1 broken, 2 bad input.
 */

const usage = 'usage: observation-service-client verify <history.ndjson> [--json]';

const main = async (args: string[]): Promise<number> => {
  const json = args.includes('--json');
  const [command, file, ...rest] = args.filter((arg) => arg !== '--json');
  if (command !== 'verify' || file === undefined || rest.length > 0) {
    console.error(usage);
    return 2;
  }
  try {
    const report = await verifyHistoryFile(file);
    console.log(json ? JSON.stringify(report, null, 2) : historyReportText(report));
    return report.ok ? 0 : 1;
  } catch (error) {
    const known = error instanceof HistoryFormatError || (error as { code?: string }).code === 'ENOENT';
    if (!known) throw error;
    console.error(`${file}: ${(error as Error).message}`);
    return 2;
  }
};

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
