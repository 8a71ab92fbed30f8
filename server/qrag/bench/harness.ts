/**
 * Timing helpers for the benchmarks. The machine is shared (2 cores), so each repeat records wall
 * time, this process's CPU time and the machine-wide busy time from /proc/stat; a repeat during
 * which other processes used more than `cleanThreshold` of the 2-core capacity is kept in the raw
 * list but left out of the statistics (as the PyTorch reference harness does).
 */
import fs from "node:fs";
import os from "node:os";

function procBusy(): { busy: number; total: number } | null {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0];
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = v[3] + (v[4] ?? 0);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

interface Repeat {
  wall: number;
  cpu: number;
  /** Share of the machine's capacity used by other processes during the repeat. */
  foreign: number;
  clean: boolean;
}

interface Stats {
  median: number;
  min: number;
  max: number;
  n: number;
  attempts: number;
}

const HZ = 100; // USER_HZ of /proc/stat

export async function timeRepeat(fn: () => void | Promise<void>, cleanThreshold = 0.05): Promise<Repeat> {
  const cores = os.cpus().length;
  const p0 = procBusy();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1e6;
  const p1 = procBusy();
  let foreign = 0;
  if (p0 && p1 && wall > 0) {
    const busySecs = (p1.busy - p0.busy) / HZ;
    foreign = Math.max(0, busySecs - cpu) / (wall * cores);
  }
  return { wall, cpu, foreign, clean: foreign <= cleanThreshold };
}

export function stats(values: number[], attempts = values.length): Stats {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  const median = n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { median, min: s[0] ?? NaN, max: s[n - 1] ?? NaN, n, attempts };
}

/** Repeats `fn` until `want` clean repeats or `maxAttempts`; stats over the clean ones (or all, if none). */
export async function measure(fn: () => void | Promise<void>, want: number, maxAttempts = want * 2): Promise<{ stats: Stats; repeats: Repeat[] }> {
  const repeats: Repeat[] = [];
  while (repeats.filter((r) => r.clean).length < want && repeats.length < maxAttempts) repeats.push(await timeRepeat(fn));
  const clean = repeats.filter((r) => r.clean);
  const use = clean.length ? clean : repeats;
  return { stats: stats(use.map((r) => r.wall), repeats.length), repeats };
}
