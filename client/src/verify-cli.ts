#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { digestFiles, historyReportText, isBadInput, verifyHistoryFile } from './verify-history-file.js';

/*
 * `npx @observation-service/client verify history.ndjson [--digest digest.json --jwks digest-keys.json]
 * [--json]`: verifies a downloaded history, against a signed digest when given one (docs/auditors.md).
 * Exit codes as `obs audit verify`: 0 intact, 1 broken, 2 bad input.
 */

const usage =
  'usage: observation-service-client verify <history.ndjson> [--digest <digest.json> --jwks <digest-keys.json>] [--json]';

const main = async (args: string[]): Promise<number> => {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, digest: { type: 'string' }, jwks: { type: 'string' } },
    });
  } catch {
    parsed = null;
  }
  const [command, file, ...rest] = parsed?.positionals ?? [];
  const { digest, jwks, json } = parsed?.values ?? {};
  if (
    command !== 'verify' ||
    file === undefined ||
    rest.length > 0 ||
    (digest === undefined) !== (jwks === undefined)
  ) {
    console.error(usage);
    return 2;
  }
  try {
    const options = digest !== undefined && jwks !== undefined ? digestFiles(digest, jwks) : {};
    const report = await verifyHistoryFile(file, options);
    console.log(json ? JSON.stringify(report, null, 2) : historyReportText(report));
    return report.ok ? 0 : 1;
  } catch (error) {
    if (!isBadInput(error)) throw error;
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
