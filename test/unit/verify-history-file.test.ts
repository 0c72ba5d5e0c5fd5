import { expect } from 'chai';
import type { JsonWebKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logRoot, type SignedDigest } from '../../client/src/audit-proofs.js';
import {
  historyFileLines,
  verifyHistoryFile,
  verifyInParallel,
} from '../../client/src/verify-history-file.js';
import { verifyHistory } from '../../client/src/verify-history.js';
import { signDigest } from '../../src/audit/digest-signature.js';
import { keyringOf, readKeys, rotateKeys } from '../../src/auth/signing-keys.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import { exportedHistory } from '../support/exported-history.js';

/*
 * verifyHistoryFile verifies a large file in chunks in worker threads; whatever the file holds, its report
 * must be the one verifyHistory gives line by line. Chunks of 4 KiB (about 16 lines) here, so that every
 * stream's events fall in many chunks, handled by both workers.
 */

const tuning = { workers: 2, minParallelBytes: 0, chunkBytes: 4096 };

/** 120 streams of 8 events, round-robin: each stream's next event 120 lines after the one before. */
const history = (nameOf?: (stream: number) => string) =>
  exportedHistory({ streams: 120, versions: 8, ...(nameOf ? { nameOf } : {}) });

describe('verifyHistoryFile (the client package, worker threads)', function () {
  this.timeout(60_000);
  let dir: string;
  let file: string;
  let digest: SignedDigest;
  let jwks: { keys: JsonWebKey[] };
  const events = history();
  const write = (lines: string[]) => writeFileSync(file, `${lines.join('\n')}\n`);
  const intact = () => events.map((event) => JSON.stringify(event));
  /** Both verifiers' reports (or errors) on the file as it is now. */
  const both = async (options = {}) => {
    const settle = (promise: Promise<unknown>) =>
      promise.then(
        (report) => ({ report }),
        (error: Error) => ({ error: `${error.name}: ${error.message}` }),
      );
    const [file_, lines] = await Promise.all([
      settle(verifyHistoryFile(file, options, tuning)),
      settle(verifyHistory(historyFileLines(file), options)),
    ]);
    expect(file_).to.deep.equal(lines);
    return lines as { report?: Awaited<ReturnType<typeof verifyHistory>>; error?: string };
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'verify-file-'));
    file = join(dir, 'history.ndjson');
    const keys = join(dir, 'keys.json');
    rotateKeys(keys);
    const keyring = keyringOf(readKeys(keys));
    jwks = keyring.digestJwks;
    const tree = logRoot();
    for (const event of events.slice(0, 700)) tree.add(event.hash!);
    const fields = {
      tenantId: 't_1',
      position: 700,
      size: 700,
      logRoot: tree.root(),
      headsRoot: 'e'.repeat(64),
      streams: 120,
      recordedAt: '2026-05-01T10:00:00.000Z',
    };
    digest = { ...fields, signature: signDigest(keyring.signing, fields) };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('verifies an intact file in its chunks, with the report of the line-by-line pass', async () => {
    write(intact());
    const parallel = await verifyInParallel(file, {}, tuning);
    expect(parallel).to.deep.equal({
      ok: true,
      events: 960,
      streams: 120,
      uncommitted: 0,
      range: { fromPosition: 1, toPosition: 960 },
    });
    expect((await both()).report).to.deep.equal(parallel);
  });

  it('leaves a stream name with a line break to the line-by-line pass, with the same report', async () => {
    const odd = history((index) => (index === 7 ? 'odd\nname,\twith "breaks"' : `s-${index}`));
    write(odd.map((event) => JSON.stringify(event)));
    expect(await verifyInParallel(file, {}, tuning)).to.equal(null);
    expect((await both()).report).to.deep.include({ ok: true, events: 960, streams: 120 });
  });

  it('names what broke as the line-by-line pass does, inside a chunk or across chunks', async () => {
    const cases: Record<string, (lines: string[]) => string[]> = {
      'data edited': (lines) =>
        lines.map((line, at) => (at === 500 ? line.replace('note 4', 'note X') : line)),
      'an event deleted': (lines) => lines.filter((_, at) => at !== 130),
      'two events swapped': (lines) => {
        const swapped = [...lines];
        [swapped[200], swapped[450]] = [swapped[450]!, swapped[200]!];
        return swapped;
      },
      'a previous hash from another stream': (lines) =>
        lines.map((line, at) =>
          at === 600 ? line.replace(events[600]!.previousHash!, events[481]!.hash!) : line,
        ),
      'a stream started again': (lines) => [...lines, lines[3]!.replace('"position":4', '"position":961')],
      'positions going back across a chunk': (lines) =>
        lines.map((line, at) => (at === 300 ? line.replace('"position":301', '"position":17') : line)),
      'not an event': (lines) => [...lines.slice(0, 400), '{"id": 1}', ...lines.slice(400)],
    };
    for (const [name, tamper] of Object.entries(cases)) {
      write(tamper(intact()));
      const { report, error } = await both();
      expect(report?.ok ?? false, name).to.equal(false);
      expect(report?.broken ?? error, name).to.not.equal(undefined);
    }
  });

  it('holds the file to a digest: whole, shorter than it, another root, a forged signature', async () => {
    write(intact());
    expect((await both({ digest, jwks })).report?.digest).to.deep.include({ ok: true, size: 700 });
    write(intact().slice(0, 650));
    expect((await both({ digest, jwks })).report?.digest?.problem).to.equal('short');
    write(intact().map((line, at) => (at === 10 ? line.replace('note 0', 'note Y') : line)));
    const edited = events.map((event, at) =>
      at === 10 ? { ...event, data: { ...(event.data as object), notes: 'note Y' } } : event,
    );
    const rehashed = new Map<string, string>();
    const rewritten = edited.map((event) => {
      const previousHash = rehashed.get(event.streamName) ?? genesisHash;
      const { position: _position, hash: _hash, previousHash: _previous, ...content } = event;
      const hash = eventHash(previousHash, content);
      rehashed.set(event.streamName, hash);
      return JSON.stringify({ ...event, hash, previousHash });
    });
    write(rewritten);
    expect((await both({ digest, jwks })).report?.digest?.problem).to.equal('log-root');
    write(intact());
    const forged = { ...digest, logRoot: 'f'.repeat(64) };
    expect((await both({ digest: forged, jwks })).report?.digest?.problem).to.equal('signature');
  });
});
