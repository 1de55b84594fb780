/**
 * A small SVG writer for RESULTS.md's chart: panels side by side, each with logarithmic axes,
 * lines through measured points, and a label at each line's last point.
 */
interface Series {
  label: string;
  color: string;
  dashed: boolean;
  points: [x: number, y: number][];
}

const [WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM] = [460, 340, 60, 70, 40, 50];

const escapeXml = (content: string) => content.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const text = (x: number, y: number, content: string, attributes = '') =>
  `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escapeXml(content)}</text>`;
const line = (x1: number, y1: number, x2: number, y2: number, style: string) =>
  `<line x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" ${style}/>`;
const stroke = (color: string, dashed: boolean) =>
  `stroke="${color}" stroke-width="2" fill="none"${dashed ? ' stroke-dasharray="6 4"' : ''}`;

/** A logarithmic axis from the power of ten below the smallest value to the one above the largest. */
function logAxis(values: number[], from: number, to: number) {
  const low = Math.floor(Math.log10(Math.min(...values)));
  const high = Math.max(Math.ceil(Math.log10(Math.max(...values))), low + 1);
  const ticks = Array.from({ length: high - low + 1 }, (_, i) => 10 ** (low + i));
  return { ticks, at: (v: number) => from + ((Math.log10(v) - low) / (high - low)) * (to - from) };
}

function panel(title: string, series: Series[], xLabel: string, offset: number): string {
  const x = logAxis(
    series.flatMap((s) => s.points.map((p) => p[0])),
    offset + LEFT,
    offset + WIDTH - RIGHT,
  );
  const y = logAxis(
    series.flatMap((s) => s.points.map((p) => p[1])),
    HEIGHT - BOTTOM,
    TOP,
  );
  const [left, right] = [offset + LEFT, offset + WIDTH - RIGHT];
  return [
    text(offset + WIDTH / 2, 22, title, 'text-anchor="middle" font-weight="bold"'),
    text((left + right) / 2, HEIGHT - 12, xLabel, 'text-anchor="middle"'),
    ...x.ticks.map(
      (v) =>
        line(x.at(v), TOP, x.at(v), HEIGHT - BOTTOM, 'stroke="#ddd"') +
        text(x.at(v), HEIGHT - BOTTOM + 16, v.toLocaleString('en'), 'text-anchor="middle"'),
    ),
    ...y.ticks.map(
      (v) =>
        line(left, y.at(v), right, y.at(v), 'stroke="#ddd"') +
        text(left - 6, y.at(v) + 4, v.toLocaleString('en'), 'text-anchor="end"'),
    ),
    ...series.map((s) => {
      const points = s.points.map(([px, py]) => [x.at(px), y.at(py)] as const);
      const [lastX, lastY] = points.at(-1)!;
      const pointList = points.map((p) => p.map((n) => n.toFixed(1)).join(',')).join(' ');
      return [
        `<polyline points="${pointList}" ${stroke(s.color, s.dashed)}/>`,
        ...points.map(([px, py]) => `<circle cx="${px.toFixed(1)}" cy="${py.toFixed(1)}" r="3" fill="${s.color}"/>`),
        text(lastX + 6, lastY - 6, s.label, `fill="${s.color}"`),
      ].join('');
    }),
  ].join('\n');
}

/** The panels side by side, with a legend below. */
export function lineCharts(
  panels: { title: string; series: Series[] }[],
  xLabel: string,
  legend: Omit<Series, 'points'>[],
): string {
  const [width, height] = [WIDTH * panels.length, HEIGHT + 30];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...panels.map((p, i) => panel(p.title, p.series, xLabel, i * WIDTH)),
    ...legend.map(
      (l, i) =>
        line(20 + i * 330, HEIGHT + 12, 50 + i * 330, HEIGHT + 12, stroke(l.color, l.dashed)) +
        text(56 + i * 330, HEIGHT + 16, l.label),
    ),
    '</svg>',
    '',
  ].join('\n');
}
