// A row's small image: the observation's first medium at 160 pixels wide, fetched once the row is near
// the screen.
import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';
import { tenantPath } from './api.js';
import { useImage, useOnScreen } from './media-image.js';
import './thumbnail.css';

export const Thumbnail = ({
  observationId,
  media,
  alt,
}: {
  observationId: string;
  media: { id: string; width: number; height: number } | undefined;
  alt: string;
}) => {
  const frame = useRef<HTMLSpanElement>(null);
  const near = useOnScreen(frame);
  const url = useImage(
    tenantPath(`/observations/${observationId}/media/${media?.id ?? ''}/thumbnail?width=160`),
    near && media !== undefined,
  );
  return (
    <span class="thumbnail" ref={frame}>
      {media === undefined ? (
        <span class="muted">no image</span>
      ) : url ? (
        <img src={url} alt={alt} width={80} height={Math.round((80 * media.height) / media.width)} />
      ) : null}
    </span>
  );
};

/**
 * A table that scrolls sideways inside its own box when the screen is narrower than it. Focusable, so
 * that keyboard users can scroll it too.
 */
export const ScrollBox = ({ label, children }: { label: string; children: ComponentChildren }) => (
  <div class="table-scroll" tabIndex={0} role="region" aria-label={label}>
    {children}
  </div>
);
