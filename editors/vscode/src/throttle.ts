/**
 * Runs a task at most once per interval, after the latest poke (trailing), and only while
 * `isActive()` holds; a poke that comes while inactive waits for `resume()`. This keeps the
 * status bar fresh after completions without polling the server.
 */
export class Throttle {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastRun = Number.NEGATIVE_INFINITY;
  private pending = false;

  constructor(
    private readonly task: () => void,
    private readonly intervalMs: number,
    private readonly isActive: () => boolean,
    private readonly now: () => number = Date.now,
  ) {}

  poke(): void {
    this.pending = true;
    this.schedule();
  }

  resume(): void {
    if (this.pending) {
      this.schedule();
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = false;
  }

  private schedule(): void {
    if (this.timer !== undefined) {
      return;
    }
    const wait = Math.max(0, this.lastRun + this.intervalMs - this.now());
    this.timer = setTimeout(() => this.fire(), wait);
  }

  private fire(): void {
    this.timer = undefined;
    if (!this.pending || !this.isActive()) {
      return;
    }
    this.pending = false;
    this.lastRun = this.now();
    this.task();
  }
}
