import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { EventStore } from '../eventstore/port.js';
import type { CollectionSpec, ListQuery, ReadModelStore } from './port.js';

/**
 * Streams a read model out for analysts, as NDJSON (one document per line, as stored) or CSV (a header row,
 * one column per top-level field, nested values as JSON text, RFC 4180 quoting and CRLF line ends).
 * Memory stays constant: the store is read a page at a time with keyset pagination, tenant by tenant, and
 * each page is written before the next is read, waiting for the output to drain.
 */

export type ExportFormat = 'ndjson' | 'csv';

export interface ExportRequest {
  /** The read model's collection spec (its logical name and fields). */
  spec: CollectionSpec;
  /** Where to read: the logical collection, or the physical name of a snapshot. */
  collection: string;
  /** A declared field every document has, to page by (then by id). */
  sortField: string;
  columns: readonly string[];
  format: ExportFormat;
  /** One tenant; every tenant when absent. */
  tenantId?: string;
  pageSize?: number;
  signal?: AbortSignal;
}

/** One CSV field: quoted when it holds a quote, a separator, a line break or edge spaces. */
export const csvField = (value: unknown): string => {
  if (value === null || value === undefined) return '';
  const text =
    typeof value === 'string'
      ? value
      : typeof value === 'number' || typeof value === 'boolean'
        ? String(value)
        : JSON.stringify(value);
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

export const csvRow = (values: readonly unknown[]): string => `${values.map(csvField).join(',')}\r\n`;

/** Every tenant, in the order they were created, from the event store (complete even offline). */
export async function* tenantIds(eventStore: EventStore): AsyncGenerator<string> {
  for (let after = 0; ;) {
    const page = await eventStore.readAll({
      after,
      maxCount: 1000,
      filter: { eventTypes: ['TenantCreated'] },
    });
    for (const event of page.events) yield (event.data as { tenantId: string }).tenantId;
    after = page.lastPosition;
    if (page.isEnd) return;
  }
}

const write = async (out: Writable, chunk: string): Promise<void> => {
  if (chunk === '' || out.write(chunk)) return;
  await once(out, 'drain');
};

/** Writes the export to `out`; resolves with the number of documents written. */
export const exportReadModel = async (
  deps: { readModels: ReadModelStore; eventStore: EventStore },
  request: ExportRequest,
  out: Writable,
): Promise<{ documents: number }> => {
  const { readModels } = deps;
  const pageSize = request.pageSize ?? 1000;
  let documents = 0;
  await readModels.ensureCollection(
    request.spec,
    request.collection === request.spec.name ? undefined : request.collection,
  );
  if (request.format === 'csv') await write(out, csvRow(request.columns));
  const tenants = request.tenantId ? [request.tenantId] : tenantIds(deps.eventStore);
  for await (const tenantId of tenants) {
    let after: ListQuery['after'];
    for (;;) {
      if (request.signal?.aborted) return { documents };
      const rows = await readModels.listJson(request.collection, {
        tenantId,
        filters: [],
        sort: { field: request.sortField, direction: 'asc' },
        limit: pageSize,
        ...(after ? { after } : {}),
      });
      const chunk =
        request.format === 'ndjson'
          ? rows.map((row) => `${row.json}\n`).join('')
          : rows
              .map((row) => {
                const doc = JSON.parse(row.json) as Record<string, unknown>;
                return csvRow(request.columns.map((column) => doc[column]));
              })
              .join('');
      await write(out, chunk);
      documents += rows.length;
      const last = rows.at(-1);
      if (!last || rows.length < pageSize) break;
      after = { value: last.sortValue, id: last.id };
    }
  }
  return { documents };
};
