// Small pieces every screen uses: loading and error states (the problem's `detail`), dates in the
// browser's time zone with UTC on hover, a hook for one asynchronous load, and keyset paging's buttons.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from './api.js';

export const ProblemBox = ({ error }: { error: unknown }) => {
  if (!error) return null;
  const problem = error instanceof ApiProblem ? error : null;
  return (
    <div class="problem" role="alert">
      <strong>{problem ? `${problem.status} ${problem.title}` : 'Something went wrong'}</strong>
      {problem?.detail && problem.detail !== problem.title ? <p>{problem.detail}</p> : null}
      {!problem && error instanceof Error ? <p>{error.message}</p> : null}
    </div>
  );
};

export const Loading = ({ what }: { what: string }) => (
  <p class="loading" role="status">
    Loading {what}…
  </p>
);

const local = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const utc = (date: Date) => date.toISOString().replace('T', ' ').replace('.000Z', 'Z');

/** A date in the browser's time zone; its UTC form on hover, and as the machine-readable value. */
export const When = ({ at }: { at: string | null | undefined }) => {
  if (!at) return <span>—</span>;
  const date = new Date(at);
  return (
    <time dateTime={date.toISOString()} title={`${utc(date)} UTC`}>
      {local.format(date)}
    </time>
  );
};

const sameYear = new Intl.DateTimeFormat(undefined, {
  day: 'numeric',
  month: 'short',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});
const otherYear = new Intl.DateTimeFormat(undefined, {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
});

/** `27 Nov 09:41:03` (the year only when it is not this one): one line in a table's narrow column. */
const compactly = (date: Date): string => {
  const format = date.getFullYear() === new Date().getFullYear() ? sameYear : otherYear;
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    format.formatToParts(date).find((p) => p.type === type)?.value ?? '';
  const time = [part('hour'), part('minute'), ...(format === sameYear ? [part('second')] : [])].join(':');
  return [part('day'), part('month'), ...(format === otherYear ? [part('year')] : []), time].join(' ');
};

/** A date as `When` shows it, on one line and short, for lists: the full UTC time is on hover. */
export const WhenCompact = ({ at }: { at: string | null | undefined }) => {
  if (!at) return <span>—</span>;
  const date = new Date(at);
  return (
    <time class="compact" dateTime={date.toISOString()} title={`${utc(date)} UTC`}>
      {compactly(date)}
    </time>
  );
};

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` whenever `keys` change, and on `reload()`; keeps the last data while loading again. */
export const useLoad = <T,>(load: () => Promise<T>, keys: unknown[]): Loaded<T> => {
  const [state, setState] = useState<{ data?: T; error: unknown; loading: boolean }>({
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: unknown) => live && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...keys, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, data: state.data, reload };
};

/** An action's button state: running, and its last problem. */
export const useAction = () => {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
};

export const Section = ({ title, children }: { title: string; children: ComponentChildren }) => (
  <section aria-label={title}>
    <h2>{title}</h2>
    {children}
  </section>
);

/**
 * Keyset paging's buttons: `cursors` are the pages followed so far (the current one last; none for the
 * first page), `next` the list's nextCursor.
 */
export const Pager = ({
  label,
  cursors,
  setCursors,
  next,
  names = ['Previous page', 'Next page'],
}: {
  label: string;
  cursors: string[];
  setCursors: (cursors: string[]) => void;
  next: string | null | undefined;
  /** The buttons' names: back to the pages seen before, and on (e.g. Newer and Older when newest first). */
  names?: readonly [string, string];
}) => (
  <nav class="pager buttons" aria-label={label}>
    <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
      {names[0]}
    </button>
    <button type="button" disabled={!next} onClick={() => next && setCursors([...cursors, next])}>
      {names[1]}
    </button>
  </nav>
);

/**
 * A box that scrolls sideways inside the page when its content is wider (a table on a phone), instead of
 * widening the page. While it overflows it is a labelled tab stop, so that a keyboard can scroll it too.
 */
export const ScrollBox = ({ label, children }: { label: string; children: ComponentChildren }) => {
  const box = useRef<HTMLDivElement>(null);
  const [overflows, setOverflows] = useState(false);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const measure = () => setOverflows(element.scrollWidth > element.clientWidth + 1);
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    if (element.firstElementChild) observer.observe(element.firstElementChild);
    return () => observer.disconnect();
  }, []);
  return (
    <div
      ref={box}
      class="table-scroll"
      {...(overflows ? { tabIndex: 0, role: 'group', 'aria-label': `${label}, scrolls sideways` } : {})}
    >
      {children}
    </div>
  );
};

/**
 * A list as a table: its caption for screen readers, a header cell per column, and `row` for each item.
 * A wide table scrolls in its own box on a phone; with `cards`, each row becomes a card there instead
 * (style.css: a cell with class `wide` takes a line of its own, one with `data-label` is prefixed with it).
 */
export const Table = <T,>({
  caption,
  columns,
  rows,
  row,
  cards = false,
}: {
  caption: string;
  columns: readonly string[];
  rows: readonly T[];
  row: (item: T) => ComponentChildren;
  cards?: boolean;
}) => (
  <ScrollBox label={caption}>
    <table class={cards ? 'cards' : undefined}>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{rows.map(row)}</tbody>
    </table>
  </ScrollBox>
);

/** A load's problem, or that it is loading while there is nothing yet to show. */
export const LoadState = ({ loaded, what }: { loaded: Loaded<unknown>; what: string }) => (
  <>
    <ProblemBox error={loaded.error} />
    {loaded.loading && !loaded.data ? <Loading what={what} /> : null}
  </>
);

/** A list's filter: a labelled select whose first choice, Any, is the empty value. */
export const FilterSelect = ({
  label,
  value,
  onChange,
  choices,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  /** Each choice's value and the text shown. */
  choices: readonly (readonly [string, string])[];
}) => (
  <label>
    {label}
    <select value={value} onChange={(event) => onChange((event.target as HTMLSelectElement).value)}>
      <option value="">Any</option>
      {choices.map(([choice, text]) => (
        <option key={choice} value={choice}>
          {text}
        </option>
      ))}
    </select>
  </label>
);

/** The list with `item` added, or taken out when it was there: a checkbox among several. */
export const toggled = <T,>(list: readonly T[], item: T): T[] =>
  list.includes(item) ? list.filter((other) => other !== item) : [...list, item];
