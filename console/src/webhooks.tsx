// Webhook subscriptions: the list with each one's status and health (a red Failing badge), and the form
// that creates one (the secret shown once). A subscription's own page is webhook.tsx.
import { useState } from 'preact/hooks';
import { webhookEventTypes } from '../../client/src/lists.gen.js';
import type { WebhookSubscription } from '../../client/src/types.js';
import { getJson, sendJson, tenantPath, type Page } from './api.js';
import { LoadState, ProblemBox, Section, When, toggled, useAction, useLoad } from './ui.js';
import { FailingBadge, LastDelivery, StatusBadge } from './webhook-health.js';
import { SecretOnce } from './webhook.js';
import { percent } from './webhook-outcome.js';

export { WebhookScreen } from './webhook.js';

/** The event types a subscription can name: the document's, generated (npm run client:types). */
export const eventTypes = webhookEventTypes;

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
        {(list.data?.data.length ?? 0) > 0 ? (
          <div class="table-scroll" tabIndex={0} role="region" aria-label="Subscriptions">
            <table class="subscriptions">
              <caption class="visually-hidden">Subscriptions</caption>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Status</th>
                  <th scope="col">Success rate</th>
                  <th scope="col">Last delivery</th>
                  <th scope="col">Events</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {(list.data?.data ?? []).map((s) => (
                  <tr key={s.id} data-webhook={s.id}>
                    <td data-label="URL" class="url">
                      <a href={`#/webhooks/${s.id}`}>{s.url}</a>
                    </td>
                    <td data-label="Status">
                      <StatusBadge subscription={s} /> <FailingBadge health={s.health} />
                    </td>
                    <td data-label="Success rate">{percent(s.health.successRate)}</td>
                    <td data-label="Last delivery">
                      <LastDelivery health={s.health} />
                    </td>
                    <td data-label="Events">{s.events.join(', ')}</td>
                    <td data-label="Created">
                      <When at={s.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
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
