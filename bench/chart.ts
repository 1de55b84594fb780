/**
 * A small SVG writer for RESULTS.md's chart: panels side by side, each with logarithmic axes,
 * lines through measured points, and a label at each line's last point.
 */
export interface Series {
  label: string;
  color: string;
  dashed?: boolean;
  points: [x: number, y: number][];
}

export interface Panel {
  title: string;
  series: Series[];
}

const WIDTH = 460;
const HEIGHT = 340;
const MARGIN = { left: 60, right: 70, top: 40, bottom: 50 };

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const text = (x: number, y: number, content: string, attributes = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escape(content)}</text>`;

/** Powers of ten from below the smallest value to above the largest. */
function decades(values: number[]): number[] {
  const low = Math.floor(Math.log10(Math.min(...values)));
  const high = Math.max(Math.ceil(Math.log10(Math.max(...values))), low + 1);
  return Array.from({ length: high - low + 1 }, (_, i) => 10 ** (low + i));
}

function panel(p: Panel, xLabel: string, offsetX: number): string {
  const xs = decades(p.series.flatMap((s) => s.points.map(([x]) => x)));
  const ys = decades(p.series.flatMap((s) => s.points.map(([, y]) => y)));
  const scale = (ticks: number[], from: number, to: number) => (v: number) =>
    from + ((Math.log10(v) - Math.log10(ticks[0]!)) / (Math.log10(ticks.at(-1)!) - Math.log10(ticks[0]!))) * (to - from);
  const x = scale(xs, offsetX + MARGIN.left, offsetX + WIDTH - MARGIN.right);
  const y = scale(ys, HEIGHT - MARGIN.bottom, MARGIN.top);
  const [left, right, top, bottom] = [x(xs[0]!), x(xs.at(-1)!), y(ys.at(-1)!), y(ys[0]!)];
  const out = [
    text(offsetX + WIDTH / 2, 22, p.title, 'text-anchor="middle" font-weight="bold"'),
    text((left + right) / 2, HEIGHT - 12, xLabel, 'text-anchor="middle"'),
    ...xs.map((v) => `<line x1="${x(v)}" x2="${x(v)}" y1="${top}" y2="${bottom}" stroke="#ddd"/>${text(x(v), bottom + 16, v.toLocaleString('en'), 'text-anchor="middle"')}`),
    ...ys.map((v) => `<line x1="${left}" x2="${right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>${text(left - 6, y(v) + 4, v.toLocaleString('en'), 'text-anchor="end"')}`),
    `<rect x="${left}" y="${top}" width="${right - left}" height="${bottom - top}" fill="none" stroke="#888"/>`,
  ];
  for (const s of p.series) {
    const points = s.points.map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`);
    out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(...points.map((pt) => `<circle cx="${pt.split(',')[0]}" cy="${pt.split(',')[1]}" r="3" fill="${s.color}"/>`));
    const [lx, ly] = s.points.at(-1)!;
    out.push(text(x(lx) + 6, y(ly) - 6, s.label, `fill="${s.color}"`));
  }
  return out.join('\n');
}

/** The panels side by side, with a legend of the colours below. */
export function lineCharts(panels: Panel[], xLabel: string, legend: { label: string; color: string; dashed?: boolean }[]): string {
  const width = WIDTH * panels.length;
  const height = HEIGHT + 30;
  const keys = legend.map((l, i) => {
    const at = 20 + i * 260;
    return `<line x1="${at}" x2="${at + 30}" y1="${HEIGHT + 12}" y2="${HEIGHT + 12}" stroke="${l.color}" stroke-width="2"${l.dashed ? ' stroke-dasharray="6 4"' : ''}/>${text(at + 36, HEIGHT + 16, l.label)}`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...panels.map((p, i) => panel(p, xLabel, i * WIDTH)),
    ...keys,
    '</svg>',
    '',
  ].join('\n');
}
