import type cliProgress from 'cli-progress';

const MIN_BYTES = 8 * 1024 * 1024;

/** A byte progress bar on stderr while a large file is read; silent when stderr is not a terminal. */
export function progressReporter(label: string): { update: (read: number, total: number) => void; stop: () => void } {
  let bar: cliProgress.SingleBar | undefined;
  const enabled = process.stderr.isTTY === true && !process.env.CI;
  // Loaded only for a terminal (the bar starts once it is there): scripts and pipes never pay for it.
  let lib: typeof cliProgress | undefined;
  if (enabled) {
    import('cli-progress').then(
      (m) => (lib = m.default),
      () => undefined, // no bar, the reading goes on
    );
  }
  return {
    update(read, total) {
      if (!enabled || total < MIN_BYTES || !lib) return;
      if (!bar) {
        bar = new lib.SingleBar(
          {
            stream: process.stderr,
            format: `reading ${label} [{bar}] {percentage}% · {value}/{total} MB`,
            clearOnComplete: true,
            hideCursor: true,
          },
          lib.Presets.shades_classic,
        );
        bar.start(Math.ceil(total / 1048576), 0);
      }
      bar.update(Math.floor(read / 1048576));
    },
    stop() {
      bar?.stop();
    },
  };
}

/**
 * One status line on stderr for work after the reading (compaction: which strategy runs), on a terminal and for a
 * source of `minBytes` or more; cleared when done.
 */
export function statusLine(bytes: number, minBytes = MIN_BYTES): { update: (text: string) => void; stop: () => void } {
  const enabled = process.stderr.isTTY === true && !process.env.CI && bytes >= minBytes;
  let shown = false;
  return {
    update(text) {
      if (!enabled) return;
      process.stderr.write(`\r\x1b[K${text}`);
      shown = true;
    },
    stop() {
      if (shown) process.stderr.write('\r\x1b[K');
      shown = false;
    },
  };
}
