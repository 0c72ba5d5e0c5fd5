// A drawer: a native modal <dialog> on the page's right edge (the full width on a phone), for the details
// of one row (a delivery attempt, an audit event). The browser gives it the focus trap, Escape and the
// backdrop; closing returns the focus to whatever opened it.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import './drawer.css';

interface Props {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
}

export const Drawer = ({ title, onClose, children }: Props) => {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    const opener = document.activeElement as HTMLElement | null;
    element.showModal();
    return () => {
      element.close();
      opener?.focus();
    };
  }, []);
  return (
    <dialog
      ref={dialog}
      class="drawer"
      aria-labelledby="drawer-title"
      onClose={onClose}
      onClick={(event) => {
        // A click on the backdrop lands on the dialog itself, outside its content.
        if (event.target === dialog.current) onClose();
      }}
    >
      <div class="drawer-content">
        <div class="drawer-head">
          <h2 id="drawer-title">{title}</h2>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
        {children}
      </div>
    </dialog>
  );
};

/** A JSON value as an auditor reads it: indented, in a box that scrolls rather than widening the page. */
export const JsonBlock = ({ value, label }: { value: unknown; label: string }) => (
  <pre class="json" tabIndex={0} aria-label={label}>
    {JSON.stringify(value, null, 2)}
  </pre>
);
