// A subscription's delivery log: a compact table of attempts, newest first, paged with keyset cursors and
// filtered; a row opens a drawer with the delivery's payload and each attempt's request and response.
import { useState } from 'preact/hooks';
import { webhookEventTypes } from '../../client/src/lists.gen.js';
import type { DeliveryAttempt, DeliveryDetails } from '../../client/src/types.js';
import { Drawer, JsonBlock } from './drawer.js';
import { getJson, query, sendJson, tenantPath, type Page } from './api.js';
import { FilterSelect, LoadState, Pager, ProblemBox, When, useAction, useLoad } from './ui.js';
import { outcomeText, shortTime } from './webhook-outcome.js';
import './webhooks.css';

const pageSize = 50;

const TestMark = () => <span class="badge test">Test</span>;

const AttemptDetails = ({ attempt }: { attempt: DeliveryDetails['attemptLog'][number] }) => (
  <section class={`attempt ${attempt.status}`} aria-label={`Attempt ${attempt.attempt}`}>
    <h3>
      Attempt {attempt.attempt}: {attempt.status}
    </h3>
    <dl class="facts">
      <dt>Sent</dt>
      <dd>
        <When at={attempt.attemptedAt} />
      </dd>
      <dt>Outcome</dt>
      <dd>{outcomeText(attempt)}</dd>
      <dt>Duration</dt>
      <dd>{Math.round(attempt.durationMs)} ms</dd>
      {attempt.nextAttemptAt ? (
        <>
          <dt>Next retry</dt>
          <dd>
            <When at={attempt.nextAttemptAt} />
          </dd>
        </>
      ) : null}
      <dt>URL</dt>
      <dd class="url">{attempt.request?.url ?? 'not recorded'}</dd>
    </dl>
    {attempt.request ? (
      <JsonBlock value={attempt.request.headers} label={`Headers sent, attempt ${attempt.attempt}`} />
    ) : (
      <p class="muted">The headers of attempts made before they were recorded are not known.</p>
    )}
    <h4>Response</h4>
    {attempt.responseBody ? (
      <pre class="json" tabIndex={0} aria-label={`Response body, attempt ${attempt.attempt}`}>
        {attempt.responseBody}
      </pre>
    ) : (
      <p class="muted">{attempt.statusCode === null ? 'Nothing answered.' : 'An empty body.'}</p>
    )}
  </section>
);

/** The drawer of one delivery: its payload, then every attempt, newest first. */
const DeliveryDrawer = ({
  webhookId,
  deliveryId,
  paused,
  onClose,
  onRedelivered,
}: {
  webhookId: string;
  deliveryId: string;
  paused: boolean;
  onClose: () => void;
  onRedelivered: () => void;
}) => {
  const details = useLoad(
    () => getJson<DeliveryDetails>(tenantPath(`/webhooks/${webhookId}/deliveries/${deliveryId}`)),
    [webhookId, deliveryId],
  );
  const action = useAction();
  const d = details.data;
  return (
    <Drawer title={`Delivery of ${d?.eventType ?? '…'}`} onClose={onClose}>
      <LoadState loaded={details} what="the delivery" />
      {d ? (
        <>
          <dl class="facts">
            <dt>Delivery</dt>
            <dd>
              <code>{d.deliveryId}</code> {d.test ? <TestMark /> : null}
            </dd>
            <dt>Status</dt>
            <dd>
              {d.status}, after {d.attempts} {d.attempts === 1 ? 'attempt' : 'attempts'}
            </dd>
            <dt>Event</dt>
            <dd>
              <code>{d.eventId}</code>
            </dd>
          </dl>
          <div class="buttons">
            <button
              type="button"
              disabled={action.busy || paused || d.status === 'claimed'}
              onClick={() =>
                void action.run(async () => {
                  await sendJson(
                    'POST',
                    tenantPath(`/webhooks/${webhookId}/deliveries/${deliveryId}/redeliver`),
                  );
                  details.reload();
                  onRedelivered();
                })
              }
            >
              Redeliver
            </button>
          </div>
          <ProblemBox error={action.error} />
          <h3>Payload</h3>
          <JsonBlock value={d.payload} label="Payload" />
          {[...d.attemptLog].reverse().map((attempt) => (
            <AttemptDetails key={attempt.attempt} attempt={attempt} />
          ))}
        </>
      ) : null}
    </Drawer>
  );
};

/** The delivery log of one subscription. `version` changes when something was sent, to load it again. */
export const DeliveryLog = ({
  webhookId,
  paused,
  version,
}: {
  webhookId: string;
  paused: boolean;
  version: number;
}) => {
  const [status, setStatus] = useState('');
  const [eventType, setEventType] = useState('');
  const [kind, setKind] = useState('');
  const [cursors, setCursors] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);
  const filtered = (set: (value: string) => void) => (value: string) => {
    set(value);
    setCursors([]);
  };
  const log = useLoad(
    () =>
      getJson<Page<DeliveryAttempt>>(
        tenantPath(
          `/webhooks/${webhookId}/deliveries${query({
            status,
            eventType,
            test: kind,
            limit: pageSize,
            cursor: cursors.at(-1),
          })}`,
        ),
      ),
    [webhookId, status, eventType, kind, cursors, version, reloads],
  );
  const rows = log.data?.data ?? [];
  return (
    <>
      <div class="filters">
        <FilterSelect
          label="Status"
          value={status}
          onChange={filtered(setStatus)}
          choices={[
            ['succeeded', 'Succeeded'],
            ['failed', 'Failed'],
          ]}
        />
        <FilterSelect
          label="Event type"
          value={eventType}
          onChange={filtered(setEventType)}
          choices={webhookEventTypes.map((type) => [type, type])}
        />
        <FilterSelect
          label="Sent as"
          value={kind}
          onChange={filtered(setKind)}
          choices={[
            ['false', 'Events'],
            ['true', 'Tests'],
          ]}
        />
      </div>
      <LoadState loaded={log} what="the delivery log" />
      {rows.length === 0 && !log.loading ? <p class="muted">No attempts yet.</p> : null}
      {rows.length > 0 ? (
        <div class="table-scroll" tabIndex={0} role="region" aria-label="Delivery attempts">
          <table class="deliveries">
            <caption class="visually-hidden">Delivery attempts, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Event type</th>
                <th scope="col">Status</th>
                <th scope="col">Outcome</th>
                <th scope="col">Duration</th>
                <th scope="col">Attempt</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((attempt) => (
                <tr key={attempt.id} data-delivery={attempt.deliveryId}>
                  <td data-label="Time">
                    <button
                      type="button"
                      class="link"
                      aria-label={`Details of ${attempt.eventType} attempt ${attempt.attempt} at ${shortTime(attempt.attemptedAt)}`}
                      onClick={() => setOpen(attempt.deliveryId)}
                    >
                      {shortTime(attempt.attemptedAt)}
                    </button>
                  </td>
                  <td data-label="Event type">
                    {attempt.eventType} {attempt.test ? <TestMark /> : null}
                  </td>
                  <td data-label="Status">
                    <span class={`badge ${attempt.status}`}>{attempt.status}</span>
                  </td>
                  <td data-label="Outcome" class={`outcome ${attempt.status}`}>
                    {outcomeText(attempt)}
                  </td>
                  <td data-label="Duration">{Math.round(attempt.durationMs)} ms</td>
                  <td data-label="Attempt">{attempt.attempt}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <p class="muted page-number">Page {cursors.length + 1}</p>
      <Pager
        label="Delivery log pages"
        cursors={cursors}
        setCursors={setCursors}
        next={log.data?.nextCursor}
      />
      {open ? (
        <DeliveryDrawer
          webhookId={webhookId}
          deliveryId={open}
          paused={paused}
          onClose={() => setOpen(null)}
          onRedelivered={() => setReloads(reloads + 1)}
        />
      ) : null}
    </>
  );
};
