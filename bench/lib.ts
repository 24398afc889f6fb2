/**
 * The bench's shared vocabulary. Each area adds a module (bench/<area>.ts) whose default export
 * is a {@link BenchModule}; bench/run.ts runs them all and prints one table.
 */
export interface Stats {
  n: number;
  median: number;
  p99: number;
}

export interface Row {
  /** e.g. "folder store", "daemon", "mcp". */
  group: string;
  figure: string;
  unit: string;
  stats: Stats;
  /** The baseline measured in the same run, when the figure has one. */
  baseline?: { name: string; stats: Stats };
  /** The figure's own ratio when it is not median/baseline median (e.g. throughput ratios). */
  ratio?: number;
  /** The goal, in words, and whether this run met it. */
  goal?: string;
  met?: boolean;
  note?: string;
}

export interface BenchContext {
  /** A one-minute pass with fewer samples. */
  quick: boolean;
  /** A fresh temporary folder, removed at the end of the run. */
  tmp(): string;
  /** Path of the built CLI (dist/cli.cjs). */
  cli: string;
}

export interface BenchModule {
  name: string;
  run(ctx: BenchContext): Promise<Row[]>;
}

export function stats(samples: readonly number[]): Stats {
  if (samples.length === 0) return { n: 0, median: Number.NaN, p99: Number.NaN };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  const mid = sorted.length / 2;
  const median =
    sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { n: samples.length, median, p99: at(0.99) };
}

/** Runs `fn` `warmup` times unmeasured, then `n` times, returning milliseconds per run. */
export async function sample(
  n: number,
  fn: () => Promise<unknown> | unknown,
  warmup = Math.min(20, Math.ceil(n / 10)),
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

/**
 * Times `a` and `b` `n` times each, alternating in blocks of `block`, so that a burst of load
 * on the machine (this one is a shared VM) falls on both alike and their ratio stays honest.
 */
export async function samplePair(
  n: number,
  a: () => Promise<unknown> | unknown,
  b: () => Promise<unknown> | unknown,
  block = 50,
): Promise<[number[], number[]]> {
  const timesA: number[] = [];
  const timesB: number[] = [];
  for (let done = 0; done < n; done += block) {
    const size = Math.min(block, n - done);
    // A few untimed calls each time one takes over from the other.
    timesA.push(...(await sample(size, a, done === 0 ? undefined : 3)));
    timesB.push(...(await sample(size, b, done === 0 ? undefined : 3)));
  }
  return [timesA, timesB];
}

export function ratio(row: Row): number | undefined {
  if (row.ratio !== undefined) return row.ratio;
  if (!row.baseline) return undefined;
  return row.stats.median / row.baseline.stats.median;
}
