/**
 * Where the host's time goes during a run (issue 27: on the H200 an iteration was host-bound, 153
 * of 167 ms before the recorded loop): `fn` under V8's sampling CPU profiler (node:inspector, in
 * this process), summed by function and by file, self time. "(idle)" is the event loop waiting
 * (on a GPU read's round trip), "(program)" native work V8 does not attribute to a JS function
 * (Dawn's calls among it), "(garbage collector)" GC. A summary, so a device call brings back
 * figures instead of a multi-megabyte profile.
 */
import { Session } from "node:inspector/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface HostProfile {
  /** Milliseconds the samples cover. */
  sampledMs: number;
  /** Self milliseconds of V8's pseudo-functions: idle, GC, native ("program"), and the rest (JS). */
  categories: { idle: number; gc: number; program: number; js: number };
  /** Heaviest functions by self time: name, where (file:line, 1-based), ms, share of sampledMs. */
  functions: { fn: string; at: string; ms: number; share: number }[];
  /**
   * Heaviest functions by total time, what they call included (a recursive one counted once per
   * sample): which caller a phase's time is under, where self time scatters over leaves such as
   * Dawn's calls. Absent from summaries written before 2026-11-29's fifth session.
   */
  inclusive?: { fn: string; at: string; ms: number; share: number }[];
  /** Heaviest files (our modules by path from server/, packages by name) by self time. */
  files: { file: string; ms: number; share: number }[];
  /**
   * What the GC has to collect: MiB allocated (V8's sampling heap profiler, collected objects
   * included) in all and by the allocating function. Absent from summaries written before
   * 2026-11-29's sixth session.
   */
  allocations?: AllocationSummary;
}

export interface AllocationSummary {
  mib: number;
  functions: { fn: string; at: string; mib: number; share: number }[];
}

interface AllocationNode {
  callFrame: CallFrame;
  selfSize: number;
  children?: AllocationNode[];
}

const PSEUDO: Record<string, keyof HostProfile["categories"]> = { "(idle)": "idle", "(garbage collector)": "gc", "(program)": "program", "(root)": "program" };

/** A script URL as a short name: "server/qrag/…" for ours, the package for node_modules, "node:…" for Node's own. */
export function shortFile(url: string): string {
  if (!url) return "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  for (const top of ["server/", "lib/", "scripts/", "test/"]) {
    const i = url.lastIndexOf(`/${top}`);
    if (i >= 0) return url.slice(i + 1);
  }
  return url.startsWith("node:") ? url : url.slice(url.lastIndexOf("/") + 1);
}

/** Self time by function and by file from a V8 CPU profile (`top` of each), the profiler's own calls left out. */
export function summarizeProfile(p: CpuProfile, top = 25): HostProfile {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const profiler = profilerNodes(p.nodes, byId);
  const fns = new Map<string, Tally>();
  const totals = new Map<string, Tally>();
  const files = new Map<string, number>();
  const categories = { idle: 0, gc: 0, program: 0, js: 0 };
  let total = 0;
  p.samples.forEach((id, i) => {
    if (profiler.has(id)) return;
    const us = Math.max(0, p.timeDeltas[i] ?? 0);
    total += us;
    const cf = byId.get(id)?.callFrame;
    if (!cf) return;
    const pseudo = PSEUDO[cf.functionName];
    if (pseudo && !cf.url) {
      categories[pseudo] += us;
      return;
    }
    categories.js += us;
    const file = shortFile(cf.url);
    add(fns, cf, us);
    files.set(file, (files.get(file) ?? 0) + us);
    const seen = new Set<string>();
    for (let n: ProfileNode | undefined = byId.get(id); n; n = byId.get(parent.get(n.id) ?? -1)) {
      if (PSEUDO[n.callFrame.functionName] && !n.callFrame.url) continue;
      const key = frameKey(n.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      add(totals, n.callFrame, us);
    }
  });
  const ms = (us: number) => Math.round(us / 100) / 10;
  const share = (us: number) => Math.round((us / Math.max(total, 1)) * 1000) / 1000;
  const heaviest = (m: Map<string, Tally>) =>
    [...m.values()].sort((a, b) => b.sum - a.sum).slice(0, top).map((f) => ({ fn: f.fn, at: f.at, ms: ms(f.sum), share: share(f.sum) }));
  return {
    sampledMs: ms(total),
    categories: { idle: ms(categories.idle), gc: ms(categories.gc), program: ms(categories.program), js: ms(categories.js) },
    functions: heaviest(fns),
    inclusive: heaviest(totals),
    files: [...files].sort((a, b) => b[1] - a[1]).slice(0, Math.ceil(top / 2)).map(([file, us]) => ({ file, ms: ms(us), share: share(us) })),
  };
}

type CallFrame = ProfileNode["callFrame"];
/** A function's microseconds (CPU profile) or bytes (heap profile). */
interface Tally {
  fn: string;
  at: string;
  sum: number;
}

function frameKey(cf: CallFrame): string {
  return `${cf.functionName}@${shortFile(cf.url)}:${cf.lineNumber + 1}`;
}

/** Adds `amount` to the function of `cf` in `m` (by name and place). */
function add(m: Map<string, Tally>, cf: CallFrame, amount: number): void {
  const key = frameKey(cf);
  const f = m.get(key) ?? { fn: cf.functionName || "(anonymous)", at: `${shortFile(cf.url)}:${cf.lineNumber + 1}`, sum: 0 };
  f.sum += amount;
  m.set(key, f);
}

/** MiB allocated in all and by function (`top` of them) from a V8 sampling heap profile. */
export function summarizeAllocations(head: AllocationNode, top = 15): AllocationSummary {
  const fns = new Map<string, Tally>();
  let total = 0;
  const walk = (n: AllocationNode): void => {
    if (n.selfSize > 0) {
      total += n.selfSize;
      add(fns, n.callFrame, n.selfSize);
    }
    for (const c of n.children ?? []) walk(c);
  };
  walk(head);
  const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
  const functions = [...fns.values()].sort((a, b) => b.sum - a.sum).slice(0, top).map((f) => ({ fn: f.fn, at: f.at, mib: mib(f.sum), share: Math.round((f.sum / Math.max(total, 1)) * 1000) / 1000 }));
  return { mib: mib(total), functions };
}

/**
 * The nodes under a call of node:inspector's session: the profiler's own. V8's first sample falls
 * in Profiler.start's `dispatch` and carries the time since the profile began: 56 ms of a
 * 3-iteration profile on lavapipe, 108 ms on the H200 (run 6), more than any function of the run.
 */
function profilerNodes(nodes: ProfileNode[], byId: ReadonlyMap<number, ProfileNode>): Set<number> {
  const out = new Set<number>();
  const mark = (id: number): void => {
    if (out.has(id)) return;
    out.add(id);
    for (const c of byId.get(id)?.children ?? []) mark(c);
  };
  for (const n of nodes) if (n.callFrame.url === "node:inspector") mark(n.id);
  return out;
}

/** Runs `fn` under the sampling CPU profiler (every `intervalUs` µs) and summarizes where the host's time went. */
export async function hostProfile(fn: () => Promise<void>, intervalUs = 200): Promise<HostProfile> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: intervalUs });
    await session.post("HeapProfiler.enable");
    // every 64 KiB allocated, kept or not: what the GC's share of the host's time is spent on
    await session.post("HeapProfiler.startSampling", { samplingInterval: 65_536, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
    await session.post("Profiler.start");
    const run = await fn().then(() => ({ ok: true as const }), (error: unknown) => ({ ok: false as const, error }));
    const { profile } = await session.post("Profiler.stop");
    const heap = await session.post("HeapProfiler.stopSampling");
    if (!run.ok) throw run.error;
    return { ...summarizeProfile(profile as unknown as CpuProfile), allocations: summarizeAllocations(heap.profile.head as unknown as AllocationNode) };
  } finally {
    session.disconnect();
  }
}

/** `--host-profile N` of the bench: training iterations run once more under the profiler (0: none). */
let profiledIterations = 0;

export function setHostProfileIterations(n: number): void {
  profiledIterations = n;
}

export function hostProfileIterations(): number {
  return profiledIterations;
}

/** One log line: the categories and the heaviest files. */
export function hostProfileLine(p: HostProfile): string {
  const c = p.categories;
  const a = p.allocations;
  const allocated = a ? `; ${a.mib} MiB allocated: ` + a.functions.slice(0, 4).map((f) => `${f.fn} ${f.mib}`).join(", ") : "";
  return `${p.sampledMs} ms sampled: JS ${c.js}, native ${c.program}, GC ${c.gc}, idle ${c.idle}; ` + p.files.slice(0, 5).map((f) => `${f.file} ${Math.round(f.share * 100)}%`).join(", ") + allocated;
}
