// One webhook subscription: its status and health, test, rotate, pause and resume, enable with
// replayMissed, replay what failed since a time, delete (after a confirmation), and its delivery log.
import { useState } from 'preact/hooks';
import type {
  ResumedWebhook,
  WebhookReplayResult,
  WebhookSubscription,
  WebhookTestResult,
} from '../../client/src/types.js';
import { sendJson, getJson, tenantPath } from './api.js';
import { Loading, ProblemBox, Section, When, useAction, useLoad } from './ui.js';
import { DeliveryLog } from './webhook-deliveries.js';
import { FailingBadge, HealthFacts, StatusBadge } from './webhook-health.js';
import { outcomeText } from './webhook-outcome.js';
import './webhooks.css';

/** A secret is shown in the one answer that made it, and never again: say so next to it. */
export const SecretOnce = ({ secret, onDone }: { secret: string; onDone: () => void }) => (
  <div class="secret" role="alert">
    <p>
      The signing secret, shown this once: store it now. <code data-secret>{secret}</code>
    </p>
    <button type="button" onClick={onDone}>
      I have stored it
    </button>
  </div>
);

/** Delete asks once more, in the page, saying what it does: a native confirm() would block the page. */
const DeleteButton = ({ onDelete, busy }: { onDelete: () => void; busy: boolean }) => {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class="danger" disabled={busy} onClick={() => setAsking(true)}>
        Delete…
      </button>
    );
  return (
    <div class="confirm" role="group" aria-label="Confirm the deletion">
      <p>Delete this subscription? Nothing more is sent to it, and it cannot be undone.</p>
      <button type="button" class="danger" disabled={busy} onClick={onDelete}>
        Delete for good
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Keep it
      </button>
    </div>
  );
};

/** Pauses an active subscription or resumes a paused one, and says what that means for its deliveries. */
const pauseOrResume = async (
  active: boolean,
  post: <T>(path: string, body?: unknown) => Promise<T>,
): Promise<string> => {
  if (active) {
    await post('/pause');
    return 'Paused: nothing is sent until you resume it.';
  }
  const resumed = await post<ResumedWebhook>('/resume');
  return `Resumed; ${resumed.replayed} held-back deliveries are on their way.`;
};

/** A time as a datetime-local input shows it: the browser's local time, to the minute. */
const localInputValue = (date: Date) =>
  new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

/** "Replay failed since": the deliveries that ended failed since a local time are sent again. */
const ReplayForm = ({ id, onDone }: { id: string; onDone: (result: WebhookReplayResult) => void }) => {
  const [since, setSince] = useState(() => localInputValue(new Date(Date.now() - 86_400_000)));
  const action = useAction();
  return (
    <form
      aria-label="Replay failed deliveries"
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () =>
          onDone(
            await sendJson<WebhookReplayResult>('POST', tenantPath(`/webhooks/${id}/replay`), {
              since: new Date(since).toISOString(),
            }),
          ),
        );
      }}
    >
      <label>
        Failed since
        <input
          type="datetime-local"
          required
          value={since}
          onInput={(e) => setSince((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={action.busy}>
        Replay failed
      </button>
      <ProblemBox error={action.error} />
    </form>
  );
};

export const WebhookScreen = ({ id }: { id: string }) => {
  const subscription = useLoad(() => getJson<WebhookSubscription>(tenantPath(`/webhooks/${id}`)), [id]);
  const [secret, setSecret] = useState<string | null>(null);
  const [tested, setTested] = useState<WebhookTestResult | null>(null);
  const [replayMissed, setReplayMissed] = useState(true);
  const [said, setSaid] = useState<string | null>(null);
  const [deleted, setDeleted] = useState(false);
  const [version, setVersion] = useState(0);
  const action = useAction();
  const s = subscription.data;
  if (deleted)
    return (
      <>
        <h1>Subscription deleted</h1>
        <p role="status">
          The subscription {id} was deleted. <a href="#/webhooks">Back to the subscriptions</a>
        </p>
      </>
    );
  if (!s)
    return subscription.error ? (
      <ProblemBox error={subscription.error} />
    ) : (
      <Loading what="the subscription" />
    );
  const refresh = () => {
    subscription.reload();
    setVersion(version + 1);
  };
  const post = <T,>(path: string, body?: unknown) =>
    sendJson<T>('POST', tenantPath(`/webhooks/${id}${path}`), body);
  /**
   * The delivery log is a read model that follows the writes: a test's attempt is in it a moment after the
   * test's answer, not always at once. Waits for it (a few seconds at most), so that the refresh shows it.
   */
  const untilLogged = async (deliveryId: string) => {
    for (let tries = 0; tries < 25; tries += 1) {
      const logged = await getJson<{ data: { deliveryId: string }[] }>(
        tenantPath(`/webhooks/${id}/deliveries?test=true&limit=20`),
      );
      if (logged.data.some((attempt) => attempt.deliveryId === deliveryId)) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  return (
    <>
      <h1>Subscription {s.id}</h1>
      <p>
        <a href="#/webhooks">Back to the subscriptions</a>
      </p>
      {secret ? <SecretOnce secret={secret} onDone={() => setSecret(null)} /> : null}
      <dl class="facts">
        <dt>URL</dt>
        <dd class="url">{s.url}</dd>
        <dt>Events</dt>
        <dd>{s.events.join(', ')}</dd>
        <dt>Status</dt>
        <dd>
          <StatusBadge subscription={s} /> <FailingBadge health={s.health} />
          {s.status === 'disabled' ? (
            <>
              {' '}
              since <When at={s.disabledAt} />: {s.disabledReason}
            </>
          ) : null}
          {s.status === 'paused' ? (
            <>
              {' '}
              since <When at={s.pausedAt} />: deliveries wait, and go out in order on resume
            </>
          ) : null}
        </dd>
        <HealthFacts health={s.health} />
      </dl>
      <div class="buttons">
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            void action.run(async () => {
              const result = await post<WebhookTestResult>('/test', {});
              setTested(result);
              await untilLogged(result.deliveryId);
              refresh();
            })
          }
        >
          Send test event
        </button>
        {s.status === 'disabled' ? null : (
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              void action.run(async () => {
                setSaid(await pauseOrResume(s.status === 'active', post));
                refresh();
              })
            }
          >
            {s.status === 'active' ? 'Pause' : 'Resume'}
          </button>
        )}
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            void action.run(async () =>
              setSecret((await post<{ secret: string }>('/secret/rotate', {})).secret),
            )
          }
        >
          Rotate the secret
        </button>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
        <DeleteButton
          busy={action.busy}
          onDelete={() =>
            void action.run(async () => {
              await sendJson('DELETE', tenantPath(`/webhooks/${id}`));
              setDeleted(true);
            })
          }
        />
      </div>
      {s.status === 'disabled' ? (
        <form
          aria-label="Enable"
          onSubmit={(event) => {
            event.preventDefault();
            void action.run(async () => {
              const enabled = await post<{ replayed: number }>('/enable', { replayMissed });
              setSaid(`Enabled; ${enabled.replayed} missed deliveries scheduled again.`);
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
      {said ? <p role="status">{said}</p> : null}
      {tested ? (
        <p role="status" class={`test-result ${tested.ok ? 'succeeded' : 'failed'}`}>
          Test {tested.eventType}: {tested.ok ? 'delivered' : 'failed'},{' '}
          {outcomeText({ ...tested, status: tested.ok ? 'succeeded' : 'failed' })},{' '}
          {Math.round(tested.durationMs)} ms
        </p>
      ) : null}
      <ProblemBox error={action.error} />
      {s.status === 'active' ? (
        <ReplayForm
          id={id}
          onDone={(result) => {
            setSaid(
              `${result.replayed} failed deliveries sent again${result.more ? '; there may be more' : ''}.`,
            );
            refresh();
          }}
        />
      ) : null}
      <Section title="Delivery log">
        <DeliveryLog webhookId={id} paused={s.status === 'paused'} version={version} />
      </Section>
    </>
  );
};
