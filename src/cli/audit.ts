import {
  digestFiles,
  historyReportText,
  isBadInput,
  verifyHistoryFile,
} from '../../client/src/verify-history-file.js';
import type { HistoryReport } from '../../client/src/verify-history.js';
import { streamHeadsProjection } from '../../projections/stream-heads.js';
import { recordDigest } from '../audit/digest.js';
import { digestKeysOf } from '../audit/digest-signature.js';
import { keyringOf, loadKeyring, readKeys } from '../auth/signing-keys.js';
import { history, parseUntil, stateAt } from '../audit/replay.js';
import { verifyTenant } from '../audit/verify.js';
import { committedForm } from '../eventstore/hash-chain.js';
import { withoutSecrets } from '../history/redaction.js';
import { flags, requireTenant } from './args.js';
import { ExitError, UsageError, type Commands, type Context, type Output } from './command.js';
import { alignedRows, progressLine } from './output.js';
import { assertTenantExists, catchUp, withStores, withTenantStores } from './stores.js';

/**
 * The keys that may have signed digests, retired ones included, from SIGNING_KEYS_FILE: none when there is
 * no keyring, and then every signed digest fails as signed by an unknown key.
 */
const digestKeys = ({ config }: Pick<Context, 'config'>) => {
  const keys = readKeys(config.signingKeysFile);
  return digestKeysOf(keys.length > 0 ? keyringOf(keys).digestJwks : { keys: [] });
};

/**
 * An NDJSON export verified from the file alone, as an auditor would (client/src/verify-history.ts): the
 * same verifier the client package ships, so the operator and the auditor get one answer.
 */
const verifyFile = async (file: string, against: { digest?: string; jwks?: string }, print: Output) => {
  const { digest, jwks } = against;
  if ((digest === undefined) !== (jwks === undefined))
    throw new UsageError('--digest and --jwks go together: the digest, and the keys that verify it');
  let report: HistoryReport;
  try {
    const options = digest !== undefined && jwks !== undefined ? digestFiles(digest, jwks) : {};
    report = await verifyHistoryFile(file, options);
  } catch (error) {
    if (isBadInput(error) || (error as { code?: string }).code === 'EISDIR')
      throw new UsageError(`${file}: ${(error as Error).message}`);
    throw error;
  }
  print(historyReportText(report), report);
  if (!report.ok) throw new ExitError(1);
};

/** A tenant's tamper-evident history: verify its hash chains and digests, replay it, record a digest. */
export const auditCommands: Commands = {
  'audit verify': {
    help:
      'audit verify --tenant <id> | --file <history.ndjson> [--digest <digest.json> --jwks <digest-keys.json>]\n' +
      '  Reads the whole history (from the stores, or a downloaded export, held to a signed digest when given one);' +
      ' checks every chain and digest. Exit 1 at the first broken link, naming it.',
    run: async (args, { print, ...context }) => {
      const { values } = flags(args, {
        options: {
          tenant: { type: 'string' },
          file: { type: 'string' },
          digest: { type: 'string' },
          jwks: { type: 'string' },
        },
      });
      if (values.file !== undefined) {
        if (values.tenant !== undefined) throw new UsageError('--file and --tenant do not go together');
        await verifyFile(values.file, values, print);
        return;
      }
      if (values.digest !== undefined || values.jwks !== undefined)
        throw new UsageError('--digest and --jwks check a downloaded history: they go with --file');
      await withTenantStores(args, context, async (stores, tenantId) => {
        const progress = progressLine('verified');
        const report = await verifyTenant(stores.eventStore, tenantId, progress.update, digestKeys(context));
        progress.done();
        const summary = `${report.events} events in ${report.streams} streams, ${report.digests} digests`;
        if (report.broken) {
          const { streamName, version, position, reason } = report.broken;
          print(
            `BROKEN after ${summary}: stream ${streamName}, version ${version}, position ${position}: ${reason}`,
            report,
          );
          throw new ExitError(1);
        }
        print(`OK: ${summary}; every chain and digest holds`, report);
      });
    },
  },
  'audit replay': {
    help: "audit replay --tenant <id> [--stream <name>] [--until <ISO time | position>]\n  Without --stream, prints the history up to --until; with it, the aggregate's state at that point.",
    run: async (args, { print, json, ...context }) => {
      const { values } = flags(args, {
        options: { tenant: { type: 'string' }, stream: { type: 'string' }, until: { type: 'string' } },
      });
      const tenantId = requireTenant(values.tenant);
      const until = values.until === undefined ? undefined : parseUntil(values.until, new Date());
      await withStores(context, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        if (values.stream) {
          if (!values.stream.includes(`-${tenantId}_`))
            throw new UsageError(`Stream ${values.stream} is not one of tenant ${tenantId}`);
          const replayed = await stateAt(stores.eventStore, values.stream, until);
          if (!replayed) throw new UsageError(`No aggregate is stored in streams like ${values.stream}`);
          // A stream without events would replay as an absent aggregate: a mistyped name looks like an answer.
          if ((await stores.eventStore.readStream(values.stream)).length === 0) {
            throw new UsageError(
              `Stream ${values.stream} does not exist: tenant ${tenantId} has no events in it`,
            );
          }
          print(
            `${values.stream} at version ${replayed.version}:\n${JSON.stringify(withoutSecrets(replayed.state), null, 2)}`,
            { stream: values.stream, ...replayed },
          );
          return;
        }
        const lines = alignedRows(
          ['position', 'occurred', 'type', 'actor', 'stream@version'],
          history(stores.eventStore, tenantId, until),
          (event) => [
            String(event.position),
            event.metadata.occurredAt,
            event.type,
            event.metadata.actor,
            `${event.streamName}@${event.streamVersion}`,
          ],
        );
        for await (const { text, row } of lines) {
          // Each event as the export shows it, without the salts of its secret fields (hash-chain.ts): they
          // belong to the chain's commitments, and the fields themselves are redacted from every JSON output.
          if (row) print(text, committedForm(row));
          else if (!json) print(text, null);
        }
      });
    },
  },
  'audit digest': {
    help: "audit digest --tenant <id>\n  Records a signed digest of the tenant's stream heads and log tree now (the service also does so on AUDIT_DIGEST_SCHEDULE).",
    run: async (args, { print, ...context }) => {
      await withTenantStores(args, context, async (stores, tenantId) => {
        await catchUp(streamHeadsProjection, stores, 60_000);
        // As the service does: a development keyring is made in DATA_DIR, a production one must exist.
        const { signing } = loadKeyring(context.config.signingKeysFile, {
          create: !context.config.givenSettings.has('SIGNING_KEYS_FILE'),
        });
        const digest = await recordDigest(
          stores.eventStore,
          stores.readModels,
          tenantId,
          new Date(),
          signing,
        );
        print(
          digest
            ? `Digest of ${digest.streams} streams and ${digest.log.size} events up to position ${digest.upToPosition}\n` +
                `  heads root ${digest.root}\n  log root   ${digest.log.root}\n  signature  ${digest.signature}`
            : 'Nothing new since the last digest',
          digest,
        );
      });
    },
  },
};
