// An image of an observation in the page: its bytes need the credential, so they come through fetch as a
// blob: URL (CSP img-src blob:), revoked when the element goes.
import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';

/** The blob: URL of the image at `path`, once fetched; nothing is fetched while `wanted` is false. */
export const useImage = (path: string, wanted = true) => {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    if (!wanted) return;
    let made: string | null = null;
    let gone = false;
    call(path).then(
      async (response) => {
        const blob = await response.blob();
        if (gone) return;
        made = URL.createObjectURL(blob);
        setUrl(made);
      },
      () => setUrl(null),
    );
    return () => {
      gone = true;
      if (made) URL.revokeObjectURL(made);
    };
  }, [path, wanted]);
  return url;
};

/** Whether the element has come near the screen: rows far down the page fetch nothing until scrolled to. */
export const useOnScreen = <E extends Element>(element: { current: E | null }) => {
  const [seen, setSeen] = useState(false);
  useEffect(() => {
    const target = element.current;
    if (!target || seen) return;
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((entry) => entry.isIntersecting)) {
          setSeen(true);
          observer.disconnect();
        }
      },
      { rootMargin: '200px' },
    );
    observer.observe(target);
    return () => observer.disconnect();
  }, [element.current, seen]);
  return seen;
};
