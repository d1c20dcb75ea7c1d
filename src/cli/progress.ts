import cliProgress from 'cli-progress';

const MIN_BYTES = 8 * 1024 * 1024;

/** A byte progress bar on stderr while a large file is read; silent when stderr is not a terminal. */
export function progressReporter(label: string): { update: (read: number, total: number) => void; stop: () => void } {
  let bar: cliProgress.SingleBar | undefined;
  const enabled = process.stderr.isTTY === true && !process.env.CI;
  return {
    update(read, total) {
      if (!enabled || total < MIN_BYTES) return;
      if (!bar) {
        bar = new cliProgress.SingleBar(
          { stream: process.stderr, format: `reading ${label} [{bar}] {percentage}% · {value}/{total} MB`, clearOnComplete: true, hideCursor: true },
          cliProgress.Presets.shades_classic,
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
