import pc from 'picocolors';

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Visible width of a string that may hold color escapes. */
function width(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, '').length;
}

/** A compact text table: first column left-aligned, the others right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: string[], style: (s: string) => string = (s) => s) =>
    cells
      .map((c, i) => {
        const pad = ' '.repeat(widths[i]! - width(c));
        return i === 0 ? style(c) + pad : pad + style(c);
      })
      .join('  ');
  return [line(header, pc.dim), ...rows.map((r) => line(r))].join('\n');
}
