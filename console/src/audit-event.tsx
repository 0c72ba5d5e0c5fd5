// One event of the audit screen, opened in the drawer: its data, and its metadata as an auditor asks for
// it (what, where in which stream, when, who, and the request that caused it).
import { Drawer, JsonBlock } from './drawer.js';
import { When } from './ui.js';

export interface HistoryEvent {
  id: string;
  type: string;
  streamName: string;
  streamVersion: number;
  position: number;
  data: unknown;
  metadata: {
    actor: string;
    occurredAt: string;
    correlationId?: string;
    causationId?: string | null;
    schemaVersion?: number;
    traceparent?: string;
  } & Record<string, unknown>;
}

const Fact = ({ term, children }: { term: string; children: preact.ComponentChildren }) => (
  <>
    <dt>{term}</dt>
    <dd>{children}</dd>
  </>
);

export const AuditEventDrawer = ({ event, onClose }: { event: HistoryEvent; onClose: () => void }) => {
  const { metadata } = event;
  return (
    <Drawer title={`${event.type} at position ${event.position}`} onClose={onClose}>
      <dl class="facts event-facts">
        <Fact term="Type">{event.type}</Fact>
        <Fact term="Stream">
          <code>{event.streamName}</code>
        </Fact>
        <Fact term="Version">{event.streamVersion}</Fact>
        <Fact term="Position">{event.position}</Fact>
        <Fact term="Occurred">
          <When at={metadata.occurredAt} /> <span class="muted">({metadata.occurredAt})</span>
        </Fact>
        <Fact term="Actor">{metadata.actor}</Fact>
        <Fact term="Correlation id">{metadata.correlationId ?? '—'}</Fact>
        <Fact term="Causation id">{metadata.causationId ?? '—'}</Fact>
        <Fact term="Schema version">{metadata.schemaVersion ?? 1}</Fact>
        <Fact term="Event id">{event.id}</Fact>
        {metadata.traceparent ? <Fact term="Trace">{metadata.traceparent}</Fact> : null}
      </dl>
      <h3>Data</h3>
      <JsonBlock value={event.data} label={`Data of ${event.type} at position ${event.position}`} />
      <h3>Metadata</h3>
      <JsonBlock value={metadata} label={`Metadata of ${event.type} at position ${event.position}`} />
    </Drawer>
  );
};
