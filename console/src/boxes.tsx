// The boxes of CV jobs over their image, in the image's own pixels (a box is 0..1 of it). Text and lines are
// fractions of the image's larger side, so that a label reads alike on a thumbnail and on a 12 MP photo, but
// never smaller on screen than a floor: a phone shows a large photo much reduced.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { percent, type CvJob, type Detection } from './cv.js';

/** Fractions of the image's larger side, and floors in CSS pixels as shown. */
const sizes = { font: 0.025, line: 0.004, minFontPx: 11, minLinePx: 1.5 } as const;

/** CSS pixels per image pixel as the overlay is shown now; 1 until it is laid out. */
const useShownScale = (width: number) => {
  const ref = useRef<SVGSVGElement>(null);
  const [scale, setScale] = useState(1);
  useEffect(() => {
    const svg = ref.current;
    if (!svg) return;
    const measure = () => {
      const shown = svg.getBoundingClientRect().width;
      if (shown > 0) setScale(shown / width);
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(svg);
    return () => observer.disconnect();
  }, [width]);
  return { ref, scale };
};

interface Frame {
  width: number;
  height: number;
  font: number;
  line: number;
}

/** A box and its label on a filled tag, above the box or, at the image's top, just inside it. */
const Box = ({ detection, frame }: { detection: Detection; frame: Frame }) => {
  const { bbox } = detection;
  const [x, y] = [bbox.x * frame.width, bbox.y * frame.height];
  const text = `${detection.label} ${percent(detection.confidence)}`;
  const textRef = useRef<SVGTextElement>(null);
  const [textWidth, setTextWidth] = useState(text.length * frame.font * 0.6);
  useLayoutEffect(() => {
    const measured = textRef.current?.getComputedTextLength();
    if (measured) setTextWidth(measured);
  }, [text, frame.font]);
  const pad = frame.font * 0.3;
  const tag = { width: textWidth + 2 * pad, height: frame.font * 1.35 };
  const tagX = Math.max(0, Math.min(x, frame.width - tag.width));
  const tagY = y >= tag.height ? y - tag.height : y;
  return (
    <>
      <rect
        class="box"
        x={x}
        y={y}
        width={bbox.width * frame.width}
        height={bbox.height * frame.height}
        stroke-width={frame.line}
      />
      <rect class="tag" x={tagX} y={tagY} width={tag.width} height={tag.height} />
      <text
        ref={textRef}
        x={tagX + pad}
        y={tagY + tag.height / 2}
        dominant-baseline="central"
        font-size={frame.font}
      >
        {text}
      </text>
    </>
  );
};

/** Over the image: every detection of the jobs given, each model in its colour (`hues`). */
/**
 * The least confident first: where boxes overlap (a cup on a table), the most confident one's label is
 * drawn last, on top, and stays readable. `index` stays the detection's place in the result.
 */
const drawOrder = <D extends { confidence: number }>(detections: D[]) =>
  detections
    .map((detection, index) => ({ detection, index }))
    .sort((a, b) => a.detection.confidence - b.detection.confidence || b.index - a.index);

export const Boxes = ({
  width,
  height,
  jobs,
  hues,
}: {
  width: number;
  height: number;
  jobs: CvJob[];
  hues: Map<string, string>;
}) => {
  const { ref, scale } = useShownScale(width);
  const side = Math.max(width, height);
  const frame: Frame = {
    width,
    height,
    font: Math.max(side * sizes.font, sizes.minFontPx / scale),
    line: Math.max(side * sizes.line, sizes.minLinePx / scale),
  };
  return (
    <svg
      ref={ref}
      class="overlay"
      viewBox={`0 0 ${width} ${height}`}
      preserveAspectRatio="none"
      aria-hidden="true"
    >
      {jobs.flatMap((job) =>
        drawOrder(job.result?.detections ?? []).map(({ detection, index }) => (
          <g
            key={`${job.id}-${index}`}
            class={`detection ${hues.get(job.model) ?? 'hue-0'}`}
            data-job={job.id}
            data-model={job.model}
            data-index={index}
          >
            <Box detection={detection} frame={frame} />
          </g>
        )),
      )}
    </svg>
  );
};
