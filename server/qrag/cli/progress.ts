/**
 * A one-line progress bar for terminals (redrawn in place with \r); on a pipe or in CI it prints
 * an occasional plain line instead, so logs stay readable.
 */
export class ProgressLine {
  private last = 0;
  private readonly tty = Boolean(process.stderr.isTTY);

  update(label: string, done: number, total: number, extra = "", etaSeconds?: number): void {
    const now = Date.now();
    const finished = done >= total;
    if (!finished && now - this.last < (this.tty ? 100 : 5000)) return;
    this.last = now;
    const frac = total > 0 ? Math.min(1, done / total) : 0;
    const eta = etaSeconds !== undefined && Number.isFinite(etaSeconds) && !finished ? ` eta ${formatSeconds(etaSeconds)}` : "";
    if (this.tty) {
      const width = 28;
      const fill = Math.round(frac * width);
      process.stderr.write(`\r${label} [${"█".repeat(fill)}${"·".repeat(width - fill)}] ${done}/${total}${eta} ${extra}\x1b[K`);
      if (finished) process.stderr.write("\n");
    } else {
      process.stderr.write(`${label} ${done}/${total} (${(frac * 100).toFixed(0)}%)${eta} ${extra}\n`);
    }
  }

  /** Prints a message on its own line without breaking the bar. */
  log(message: string): void {
    process.stderr.write(this.tty ? `\r\x1b[K${message}\n` : `${message}\n`);
  }
}

function formatSeconds(s: number): string {
  if (s < 90) return `${Math.round(s)}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  return `${(s / 3600).toFixed(1)}h`;
}
