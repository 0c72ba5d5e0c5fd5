// The tenant's event history, newest first (order=desc), filtered by type and stream, each event opening
// in a drawer, downloadable as NDJSON; and the tamper check (GET …/audit/verification, as `obs audit verify`).
import { useState } from 'preact/hooks';
import { call, getJson, query, tenantPath, type Page } from './api.js';
import { AuditEventDrawer, type HistoryEvent } from './audit-event.js';
import { Loading, Pager, ProblemBox, Section, Table, When, WhenCompact, useAction, useLoad } from './ui.js';

interface Verification {
  ok: boolean;
  events: number;
  streams: number;
  digests: number;
  broken: { streamName: string; version: number; position: number; reason: string } | null;
  verifiedAt: string;
}

export const AuditScreen = () => {
  const [draft, setDraft] = useState({ type: '', stream: '' });
  const [filters, setFilters] = useState(draft);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const filterQuery = (extra: Record<string, string | number | undefined>) =>
    tenantPath(
      `/events${query({ type: filters.type.replace(/\s+/g, ''), stream: filters.stream.trim(), ...extra })}`,
    );
  const events = useLoad(
    () => getJson<Page<HistoryEvent>>(filterQuery({ limit: 50, cursor, order: 'desc' })),
    [filters, cursor],
  );
  const download = useAction();
  const [file, setFile] = useState<string | null>(null);
  const verify = useAction();
  const [verification, setVerification] = useState<Verification | null>(null);
  const [opened, setOpened] = useState<HistoryEvent | null>(null);

  return (
    <>
      <h1>Audit</h1>
      <Section title="Tamper check">
        <p>
          Reads the whole history and checks every hash chain and digest, as <code>obs audit verify</code>{' '}
          does.
        </p>
        <button
          type="button"
          disabled={verify.busy}
          onClick={() =>
            void verify.run(async () =>
              setVerification(await getJson<Verification>(tenantPath('/audit/verification'))),
            )
          }
        >
          Verify the history
        </button>
        {verify.busy ? <Loading what="the verification" /> : null}
        <ProblemBox error={verify.error} />
        {verification ? (
          <div role="status" class={`verification ${verification.ok ? 'succeeded' : 'failed'}`}>
            {verification.ok ? (
              <p>
                Intact: {verification.events} events in {verification.streams} streams, {verification.digests}{' '}
                digests, checked <When at={verification.verifiedAt} />.
              </p>
            ) : (
              <p>
                Broken at stream <code>{verification.broken!.streamName}</code>, version{' '}
                {verification.broken!.version}, position {verification.broken!.position}:{' '}
                {verification.broken!.reason}.
              </p>
            )}
          </div>
        ) : null}
      </Section>
      <Section title="Event history">
        <form
          class="filters"
          aria-label="Event filters"
          onSubmit={(event) => {
            event.preventDefault();
            setFilters(draft);
            setCursors([]);
          }}
        >
          <label>
            Event types (comma-separated)
            <input
              value={draft.type}
              onInput={(e) => setDraft({ ...draft, type: (e.target as HTMLInputElement).value })}
            />
          </label>
          <label>
            Stream
            <input
              value={draft.stream}
              onInput={(e) => setDraft({ ...draft, stream: (e.target as HTMLInputElement).value })}
            />
          </label>
          <div class="buttons">
            <button type="submit">Apply filters</button>
            <button
              type="button"
              disabled={download.busy}
              onClick={() =>
                void download.run(async () => {
                  const response = await call(filterQuery({}), { accept: 'application/x-ndjson' });
                  if (file) URL.revokeObjectURL(file);
                  setFile(URL.createObjectURL(await response.blob()));
                })
              }
            >
              Prepare NDJSON download
            </button>
            {file ? (
              <a href={file} download="events.ndjson">
                Download events.ndjson
              </a>
            ) : null}
          </div>
        </form>
        <ProblemBox error={events.error ?? download.error} />
        {events.loading && !events.data ? <Loading what="events" /> : null}
        <Table
          caption="Events, newest first"
          cards
          columns={['Occurred', 'Type', 'Stream and version', 'Actor', 'Position']}
          rows={events.data?.data ?? []}
          row={(e) => (
            <tr key={e.id}>
              <td>
                <WhenCompact at={e.metadata.occurredAt} />
              </td>
              <td>
                <button
                  type="button"
                  class="link"
                  aria-haspopup="dialog"
                  title="Open its data and metadata"
                  onClick={() => setOpened(e)}
                >
                  {e.type}
                </button>
              </td>
              <td class="id wide">
                <code>{e.streamName}</code> v{e.streamVersion}
              </td>
              <td class="id" data-label="by">
                {e.metadata.actor}
              </td>
              <td data-label="position">{e.position}</td>
            </tr>
          )}
        />
        <Pager
          label="Event pages"
          cursors={cursors}
          setCursors={setCursors}
          next={events.data?.nextCursor}
          names={['Newer events', 'Older events']}
        />
        {opened ? <AuditEventDrawer event={opened} onClose={() => setOpened(null)} /> : null}
      </Section>
    </>
  );
};
