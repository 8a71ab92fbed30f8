/**
 * GPU time per program (issue 27 part 1: which kernel the GPU spends its time in): one run of
 * `fn` with every program of ours in a compute pass of its own and timed (gpu-timing.ts
 * `byProgram`). A run of its own because a pass each costs the GPU a little more than the usual
 * one pass for many: `totalMs` is that run's, a little above the phases' figures.
 */
import { gpuTimingOff, gpuTimingOn, settleGpuTimes } from "../backend/gpu-timing.ts";

export interface ProgramTimes {
  totalMs: number;
  /** Most time first; `share` of totalMs. */
  programs: { program: string; ms: number; passes: number; share: number }[];
  /** Passes the query set had no room for (their programs are missing above). */
  untimed: number;
}

/** GPU time per program of one run of `fn`; null where the adapter has no timestamp queries (or off webgpu). */
export async function programTimes(fn: () => Promise<void>): Promise<ProgramTimes | null> {
  if (!gpuTimingOn({ byProgram: true })) return null;
  try {
    await fn();
  } finally {
    gpuTimingOff();
  }
  const t = await settleGpuTimes();
  const r = (x: number, d: number) => Math.round(x * d) / d;
  const totalMs = Object.values(t.byProgram).reduce((a, p) => a + p.ms, 0);
  const programs = Object.entries(t.byProgram)
    .map(([program, p]) => ({ program, ms: r(p.ms, 1000), passes: p.passes, share: r(p.ms / Math.max(totalMs, 1e-9), 1000) }))
    .sort((a, b) => b.ms - a.ms);
  return { totalMs: r(totalMs, 1000), programs, untimed: t.untimed };
}

/** One log line: the programs taking most of the time. */
export function topPrograms(p: ProgramTimes | null, n = 5): string {
  if (!p) return "(untimed)";
  return `${p.totalMs} ms: ` + p.programs.slice(0, n).map((x) => `${x.program} ${Math.round(x.share * 100)}% (${x.passes})`).join(", ");
}
