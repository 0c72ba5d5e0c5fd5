// Webhook subscriptions: create (the secret shown once), test, rotate, enable with replayMissed, delete;
// and the delivery log, each delivery's attempts as a timeline, with redelivery.
import { useState } from 'preact/hooks';
import { webhookEventTypes } from '../../client/src/lists.gen.js';
import type { DeliveryAttempt, WebhookSubscription, WebhookTestResult } from '../../client/src/types.js';
import { getJson, query, sendJson, tenantPath, type Page } from './api.js';
import {
  FilterSelect,
  LoadState,
  Loading,
  ProblemBox,
  Section,
  Table,
  When,
  toggled,
  useAction,
  useLoad,
} from './ui.js';

/** The event types a subscription can name: the document's, generated (npm run client:types). */
export const eventTypes = webhookEventTypes;

/** A secret is shown in the one answer that made it, and never again: say so next to it. */
const SecretOnce = ({ secret, onDone }: { secret: string; onDone: () => void }) => (
  <div class="secret" role="alert">
    <p>
      The signing secret, shown this once: store it now. <code data-secret>{secret}</code>
    </p>
    <button type="button" onClick={onDone}>
      I have stored it
    </button>
  </div>
);

const CreateForm = ({ onCreated }: { onCreated: (secret: string) => void }) => {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['observation.created']);
  const [secret, setSecret] = useState('');
  const action = useAction();
  return (
    <form
      aria-label="New subscription"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () => {
          const created = await sendJson<{ secret: string }>('POST', tenantPath('/webhooks'), {
            url,
            events,
            ...(secret.trim() ? { secret: secret.trim() } : {}),
          });
          setUrl('');
          setSecret('');
          onCreated(created.secret);
        });
      }}
    >
      <label>
        Receiver URL
        <input
          type="url"
          required
          value={url}
          onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Secret (whsec_…; leave empty to have one generated)
        <input
          type="password"
          autoComplete="off"
          value={secret}
          onInput={(e) => setSecret((e.target as HTMLInputElement).value)}
        />
      </label>
      <fieldset>
        <legend>Event types</legend>
        {eventTypes.map((type) => (
          <label key={type}>
            <input
              type="checkbox"
              name="events"
              value={type}
              checked={events.includes(type)}
              onChange={() => setEvents(toggled(events, type))}
            />
            {type}
          </label>
        ))}
      </fieldset>
      <button type="submit" disabled={action.busy}>
        Create subscription
      </button>
      <ProblemBox error={action.error} />
    </form>
  );
};

export const WebhooksScreen = () => {
  const list = useLoad(() => getJson<Page<WebhookSubscription>>(tenantPath('/webhooks?limit=200')), []);
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <>
      <h1>Webhooks</h1>
      {secret ? <SecretOnce secret={secret} onDone={() => setSecret(null)} /> : null}
      <Section title="Subscriptions">
        <LoadState loaded={list} what="subscriptions" />
        <Table
          caption="Subscriptions"
          columns={['URL', 'Events', 'Status', 'Created']}
          rows={list.data?.data ?? []}
          row={(s) => (
            <tr key={s.id}>
              <td>
                <a href={`#/webhooks/${s.id}`}>{s.url}</a>
              </td>
              <td>{s.events.join(', ')}</td>
              <td>{s.status === 'disabled' ? `disabled: ${s.disabledReason ?? ''}` : 'active'}</td>
              <td>
                <When at={s.createdAt} />
              </td>
            </tr>
          )}
        />
      </Section>
      <Section title="New subscription">
        <CreateForm
          onCreated={(made) => {
            setSecret(made);
            list.reload();
          }}
        />
      </Section>
    </>
  );
};

/** Attempts of one delivery, oldest first, as the log lists them newest first. */
const byDelivery = (attempts: readonly DeliveryAttempt[]) => {
  const groups = new Map<string, DeliveryAttempt[]>();
  for (const attempt of attempts)
    groups.set(attempt.deliveryId, [attempt, ...(groups.get(attempt.deliveryId) ?? [])]);
  return [...groups.entries()];
};

const truncate = (text: string, max = 200) => (text.length > max ? `${text.slice(0, max)}…` : text);

const Timeline = ({ attempts }: { attempts: DeliveryAttempt[] }) => (
  <ol class="timeline">
    {attempts.map((a) => (
      <li key={a.id} class={a.status} data-attempt={a.attempt}>
        <When at={a.attemptedAt} /> attempt {a.attempt}: <strong>{a.status}</strong>,{' '}
        {a.statusCode === null ? 'no answer' : `HTTP ${a.statusCode}`}, {Math.round(a.durationMs)} ms
        {a.error ? `, ${a.error}` : ''}
        {a.responseBody ? (
          <div>
            Response: <code>{truncate(a.responseBody)}</code>
          </div>
        ) : null}
        {a.nextAttemptAt ? (
          <div>
            Next retry: <When at={a.nextAttemptAt} />
          </div>
        ) : null}
      </li>
    ))}
  </ol>
);

export const WebhookScreen = ({ id }: { id: string }) => {
  const subscription = useLoad(() => getJson<WebhookSubscription>(tenantPath(`/webhooks/${id}`)), [id]);
  const [status, setStatus] = useState('');
  const [eventType, setEventType] = useState('');
  const log = useLoad(
    () =>
      getJson<Page<DeliveryAttempt>>(
        tenantPath(`/webhooks/${id}/deliveries${query({ status, eventType, limit: 200 })}`),
      ),
    [id, status, eventType],
  );
  const [secret, setSecret] = useState<string | null>(null);
  const [tested, setTested] = useState<WebhookTestResult | null>(null);
  const [replayMissed, setReplayMissed] = useState(true);
  const [replayed, setReplayed] = useState<number | null>(null);
  const action = useAction();
  const s = subscription.data;
  if (!s)
    return subscription.error ? (
      <ProblemBox error={subscription.error} />
    ) : (
      <Loading what="the subscription" />
    );
  const refresh = () => {
    subscription.reload();
    log.reload();
  };
  return (
    <>
      <h1>Subscription {s.id}</h1>
      <p>
        <a href="#/webhooks">Back to the subscriptions</a>
      </p>
      {secret ? <SecretOnce secret={secret} onDone={() => setSecret(null)} /> : null}
      <dl>
        <dt>URL</dt>
        <dd>{s.url}</dd>
        <dt>Events</dt>
        <dd>{s.events.join(', ')}</dd>
        <dt>Status</dt>
        <dd>
          {s.status}
          {s.status === 'disabled' ? (
            <>
              {' '}
              since <When at={s.disabledAt} />: {s.disabledReason}
            </>
          ) : null}
        </dd>
      </dl>
      <div class="buttons">
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            void action.run(async () => {
              setTested(await sendJson<WebhookTestResult>('POST', tenantPath(`/webhooks/${id}/test`), {}));
              log.reload();
            })
          }
        >
          Send test event
        </button>
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            void action.run(async () =>
              setSecret(
                (await sendJson<{ secret: string }>('POST', tenantPath(`/webhooks/${id}/secret/rotate`), {}))
                  .secret,
              ),
            )
          }
        >
          Rotate the secret
        </button>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      {s.status === 'disabled' ? (
        <form
          aria-label="Enable"
          onSubmit={(event) => {
            event.preventDefault();
            void action.run(async () => {
              const enabled = await sendJson<{ replayed: number }>(
                'POST',
                tenantPath(`/webhooks/${id}/enable`),
                {
                  replayMissed,
                },
              );
              setReplayed(enabled.replayed);
              refresh();
            });
          }}
        >
          <label>
            <input type="checkbox" checked={replayMissed} onChange={() => setReplayMissed(!replayMissed)} />
            Replay what it missed: the delivery that disabled it (once more), the deliveries the disable
            cancelled, and every event it lists since it was disabled
          </label>
          <button type="submit">Enable</button>
        </form>
      ) : null}
      {replayed !== null ? <p role="status">Enabled; {replayed} missed deliveries scheduled again.</p> : null}
      {tested ? (
        <p role="status" class={`test-result ${tested.ok ? 'succeeded' : 'failed'}`}>
          Test {tested.eventType}: {tested.ok ? 'delivered' : 'failed'},{' '}
          {tested.statusCode === null ? 'no answer' : `HTTP ${tested.statusCode}`},{' '}
          {Math.round(tested.durationMs)} ms
          {tested.error ? `, ${tested.error}` : ''}
        </p>
      ) : null}
      <ProblemBox error={action.error} />
      <Section title="Delivery log">
        <div class="filters">
          <FilterSelect
            label="Status"
            value={status}
            onChange={setStatus}
            choices={[
              ['succeeded', 'Succeeded'],
              ['failed', 'Failed'],
            ]}
          />
          <FilterSelect
            label="Event type"
            value={eventType}
            onChange={setEventType}
            choices={eventTypes.map((t) => [t, t])}
          />
        </div>
        <ProblemBox error={log.error} />
        {(log.data?.data.length ?? 0) === 0 && !log.loading ? <p class="muted">No attempts yet.</p> : null}
        {byDelivery(log.data?.data ?? []).map(([deliveryId, attempts]) => (
          <article
            key={deliveryId}
            class="delivery"
            data-delivery={deliveryId}
            aria-label={`Delivery ${deliveryId}`}
          >
            <h3>
              {attempts[0]!.eventType} <code>{deliveryId}</code>
            </h3>
            <Timeline attempts={attempts} />
            <button
              type="button"
              disabled={action.busy}
              onClick={() =>
                void action.run(async () => {
                  await sendJson('POST', tenantPath(`/webhooks/${id}/deliveries/${deliveryId}/redeliver`));
                  log.reload();
                })
              }
            >
              Redeliver {deliveryId}
            </button>
          </article>
        ))}
      </Section>
    </>
  );
};
