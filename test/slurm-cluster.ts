/**
 * A throwaway single-node Slurm for the tests, from Debian's packages (slurm-wlm, munge), with no
 * systemd and nothing outside a temp folder: a fresh munge key and `munged` on its own socket, a
 * written slurm.conf (this host as the one node, its real CPUs and memory from `slurmd -C`; two
 * partitions: `debug`, the default, up to 60 min, and `small`, 1 CPU, 1 GiB, 5 min; `urgent`, whose
 * jobs pre-empt theirs), then `slurmctld -D` and `slurmd -D` as child processes on free ports. `SLURM_CONF` in `env` points
 * the client commands at it. Ready once `sinfo` shows the node idle; `stop()` cancels every job,
 * waits for them to end, ends the daemons and removes the folder.
 *
 * Accounting is off (no slurmdbd, so `sacct` says "accounting storage is disabled"): ended jobs are
 * read from `squeue --states=all` while slurmctld remembers them (MinJobAge=600 here). The time
 * limit is enforced with no grace (OverTimeLimit=0, KillWait=2): a 1-minute job shows TIMEOUT
 * within about 60–95 s (slurmctld checks limits every 30 s). Partition limits are enforced at
 * submission (EnforcePartLimits=ALL), so sbatch refuses what a partition cannot run.
 *
 * Faults as a cluster makes them: a job in `urgent` (PriorityTier=2) that needs CPUs the node's
 * `debug`/`small` jobs hold pre-empts them (PreemptType=preempt/partition_prio, PreemptMode=CANCEL:
 * SIGTERM, KillWait, then the job ends PREEMPTED). `scontrol update nodename=… state=down` ends the
 * node's jobs NODE_FAIL; the node stays down until `state=resume` (ReturnToService=1 returns only
 * nodes that were down for not answering). `scontrol update jobid=… timelimit=0` makes a running
 * job overdue: slurmctld's time-limit check (every 30 s, fixed in slurmctld) ends it TIMEOUT.
 *
 * Without Slurm the tests that use it are skipped with `slurmSkip`'s reason, except under CI=true
 * (.ci/run installs the packages), where they run and fail.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, GiveUp, tmpDir, waitFor } from "./platform-helpers.ts";

const DAEMONS = ["munged", "slurmctld", "slurmd"] as const;
const COMMANDS = ["sbatch", "squeue", "scancel", "sinfo", "sacct"] as const;

function which(cmd: string): string | null {
  const dirs = [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/bin", "/sbin"];
  for (const d of dirs) {
    const p = path.join(d, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

/** Why Slurm cannot run here ("" when it can). */
export const slurmMissing: string = (() => {
  const gone = [...DAEMONS, ...COMMANDS].filter((c) => !which(c));
  return gone.length ? `${gone.join(", ")} not found (apt-get install slurm-wlm munge)` : "";
})();

/** A node:test `skip` option for tests that need Slurm: skipped without it, but not under CI=true. */
export const slurmSkip: string | false = slurmMissing && process.env.CI !== "true" ? `no Slurm here: ${slurmMissing}; Slurm tests skipped` : false;

export interface SlurmCluster {
  dir: string;
  /** The commands' environment: this process's with SLURM_CONF pointing at the cluster. */
  env: NodeJS.ProcessEnv;
  /** A folder for job scripts and output (inside `dir`). */
  jobsDir: string;
  /** The node's name (this host's short name). */
  node: string;
  /** The node's CPUs (a job asking for all of them needs the whole node). */
  cpus: number;
  /** What the daemons printed, for a failed test's message. */
  logs(): string;
  stop(): Promise<void>;
}

/** This host as slurmd sees it: "NodeName=vm CPUs=2 Boards=1 … RealMemory=24105". */
function hostHardware(): Record<string, string> {
  const line = execFileSync(which("slurmd")!, ["-C"], { encoding: "utf8" }).split("\n")[0];
  return Object.fromEntries(line.split(/\s+/).filter(Boolean).map((kv) => kv.split("=", 2) as [string, string]));
}

export async function startSlurmCluster(): Promise<SlurmCluster> {
  if (slurmMissing) throw new Error(`${slurmMissing} and CI=true`);
  const dir = tmpDir("qrag-slurm-");
  fs.chmodSync(dir, 0o755);
  const sub = (name: string, mode = 0o700) => {
    const p = path.join(dir, name);
    fs.mkdirSync(p, { mode });
    return p;
  };
  const [mungeDir, stateDir, spoolDir, logDir, jobsDir] = [sub("munge"), sub("state"), sub("spool"), sub("log"), sub("jobs", 0o755)];
  const socket = path.join(mungeDir, "munge.socket");
  fs.writeFileSync(path.join(mungeDir, "munge.key"), crypto.randomBytes(1024), { mode: 0o400 });
  fs.chmodSync(mungeDir, 0o755); // the socket must be reachable; the key stays 0400

  const hw = hostHardware();
  const node = hw.NodeName;
  const user = os.userInfo().username;
  const [ctldPort, dPort] = [await freePort(), await freePort()];
  const conf = path.join(dir, "slurm.conf");
  fs.writeFileSync(
    conf,
    [
      `ClusterName=qrag${crypto.randomBytes(3).toString("hex")}`,
      `SlurmctldHost=${node}(127.0.0.1)`,
      `SlurmctldPort=${ctldPort}`,
      `SlurmdPort=${dPort}`,
      `SlurmUser=${user}`,
      `SlurmdUser=${user}`,
      "AuthType=auth/munge",
      "CredType=cred/munge",
      `AuthInfo=socket=${socket}`,
      `StateSaveLocation=${stateDir}`,
      `SlurmdSpoolDir=${spoolDir}`,
      `SlurmctldPidFile=${path.join(dir, "slurmctld.pid")}`,
      `SlurmdPidFile=${path.join(dir, "slurmd.pid")}`,
      `SlurmctldLogFile=${path.join(logDir, "slurmctld.log")}`,
      `SlurmdLogFile=${path.join(logDir, "slurmd.log")}`,
      "ProctrackType=proctrack/linuxproc",
      "TaskPlugin=task/none",
      "SelectType=select/cons_tres",
      "SelectTypeParameters=CR_Core_Memory",
      "JobAcctGatherType=jobacct_gather/none",
      "AccountingStorageType=accounting_storage/none",
      "JobCompType=jobcomp/none",
      "MpiDefault=none",
      "MailProg=/bin/true",
      "SchedulerType=sched/backfill",
      "EnforcePartLimits=ALL",
      "MinJobAge=600",
      "OverTimeLimit=0",
      "KillWait=2",
      "ReturnToService=1",
      `NodeName=${node} NodeAddr=127.0.0.1 CPUs=${hw.CPUs} Boards=${hw.Boards} SocketsPerBoard=${hw.SocketsPerBoard} CoresPerSocket=${hw.CoresPerSocket} ThreadsPerCore=${hw.ThreadsPerCore} RealMemory=${hw.RealMemory} State=UNKNOWN`,
      "PreemptType=preempt/partition_prio",
      "PreemptMode=CANCEL",
      `PartitionName=debug Nodes=${node} Default=YES MaxTime=60 State=UP`,
      `PartitionName=small Nodes=${node} MaxTime=5 MaxCPUsPerNode=1 MaxMemPerNode=1024 State=UP`,
      `PartitionName=urgent Nodes=${node} MaxTime=5 PriorityTier=2 State=UP`,
      "",
    ].join("\n"),
  );
  const env: NodeJS.ProcessEnv = { ...process.env, SLURM_CONF: conf };

  const procs: ChildProcess[] = [];
  const out: string[] = [];
  const start = (cmd: string, args: string[]) => {
    const p = spawn(which(cmd)!, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (b: Buffer) => {
      out.push(`${cmd}: ${b.toString()}`);
      if (out.length > 400) out.splice(0, out.length - 400);
    };
    p.stdout!.on("data", keep);
    p.stderr!.on("data", keep);
    procs.push(p);
    return p;
  };
  const logs = () => out.join("").slice(-6000);
  const alive = (p: ChildProcess, name: string) => {
    if (p.exitCode !== null || p.signalCode !== null) throw new GiveUp(`${name} exited (${p.exitCode ?? p.signalCode})\n${logs()}`);
  };
  const kill = (sig: NodeJS.Signals) => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill(sig);
  };
  const onExit = () => {
    kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", onExit);

  const sinfo = () => execFileSync(which("sinfo")!, ["--noheader", "--Node", "--format=%T"], { env, encoding: "utf8", timeout: 10_000 }).trim();
  try {
    const munged = start("munged", ["-F", "-f", `--key-file=${path.join(mungeDir, "munge.key")}`, `--socket=${socket}`, `--pid-file=${path.join(mungeDir, "munged.pid")}`, `--log-file=${path.join(logDir, "munged.log")}`, `--seed-file=${path.join(mungeDir, "seed")}`]);
    await waitFor("munged's socket", () => (alive(munged, "munged"), fs.existsSync(socket)), 20_000, 50, logs);
    const ctld = start("slurmctld", ["-D", "-i"]);
    const d = start("slurmd", ["-D", "-N", node]);
    await waitFor(
      "the Slurm node to be idle",
      () => (alive(ctld, "slurmctld"), alive(d, "slurmd"), sinfo().split(/\s+/).every((s) => s === "idle")),
      60_000,
      200,
      () => `${logs()}\nslurmctld.log: ${readTail(path.join(logDir, "slurmctld.log"))}`,
    );
  } catch (e) {
    process.removeListener("exit", onExit);
    onExit();
    throw e;
  }

  let stopped = false;
  return {
    dir,
    env,
    jobsDir,
    node,
    cpus: Number(hw.CPUs),
    logs: () => `${logs()}\nslurmctld.log: ${readTail(path.join(logDir, "slurmctld.log"))}\nslurmd.log: ${readTail(path.join(logDir, "slurmd.log"))}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        // jobs outlive slurmd (slurmstepd is their parent): end them first, through Slurm
        const squeue = (states: string) => execFileSync(which("squeue")!, ["--noheader", `--states=${states}`, "--format=%i"], { env, encoding: "utf8", timeout: 10_000 }).trim();
        const ids = squeue("PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING").split(/\s+/).filter(Boolean);
        if (ids.length) execFileSync(which("scancel")!, ids, { env, timeout: 10_000 });
        await waitFor("every job to end", () => squeue("RUNNING,COMPLETING,CONFIGURING,SUSPENDED") === "", 30_000, 200);
      } catch {
        // the daemons are going anyway
      }
      kill("SIGTERM");
      await waitFor("the Slurm daemons to exit", () => procs.every((p) => p.exitCode !== null || p.signalCode !== null), 15_000, 50).catch(() => kill("SIGKILL"));
      process.removeListener("exit", onExit);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readTail(file: string, bytes = 3000): string {
  try {
    const s = fs.readFileSync(file, "utf8");
    return s.slice(-bytes);
  } catch {
    return "(none)";
  }
}

/** A dashboard's settings for a Slurm queue on `cluster` (partition debug, fast polling), plus `extra`. */
export function slurmDashboardEnv(cluster: SlurmCluster, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SLURM_CONF: cluster.env.SLURM_CONF!,
    QRAG_EXECUTOR: "slurm",
    QRAG_SLURM_PARTITION: "debug",
    QRAG_SLURM_POLL_MS: "500",
    QRAG_SLURM_JOBS_DIR: path.join(cluster.jobsDir, "runs"),
    QRAG_SLURM_MEM_MB: "1500",
    ...extra,
  };
}
