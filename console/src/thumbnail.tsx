// A row's small image: the observation's first medium at 160 pixels wide, fetched once the row is near
// the screen.
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
