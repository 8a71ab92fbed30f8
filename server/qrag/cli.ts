/**
 * The `qrag` command line: train | eval | sweep | eval-official | agent | babi-check | bench | config.
 * Examples:
 *   qrag train preset=babilong-cpu envs.task=qa2 steps_count=3000
 *   qrag train envs=babilong algo=pqn_cpu envs.task=qa2 steps_count=3000
 *   qrag eval runs/babilong-qa2-…  --samples 200
 *   qrag sweep runs/babilong-qa2-… --lengths 50,160,1200
 *   qrag babi-check qa1_single-supporting-fact_test.txt
 *   qrag eval-official --checkpoint runs/babilong-qa1-… --files qa1/4k.parquet qa1/16k.parquet
 *   qrag agent --model gguf:models/qwen.gguf --retriever runs/babilong-qa1-… --lengths 50,1200 --samples 50 --out agent.jsonl
 * Environment (the engine's own settings, settings.ts): QRAG_DATA_ROOT (else QRAG_DATA_DIR, else
 * data/), QRAG_CONFIG_DIR (else configs/), QRAG_BACKEND, QRAG_WASM_THREADS.
 */
import { Command, CommanderError, Option } from "commander";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { resolveConfig, parseOverride } from "./config/config.ts";
import { InputError } from "./errors.ts";
import { ENGINE_VERSION } from "./version.ts";
import { ProgressLine } from "./cli/progress.ts";
import { intFlag, intList, numberFlag } from "./cli/flags.ts";
import { addReaderFlags, readerSpecFrom, type ReaderFlags } from "./cli/reader-flags.ts";
import { MAX_MATMUL_SIZE } from "./bench/cli.ts";
import { parseModelSpec } from "./llm-agent/model-spec.ts";
import { AGENT_FORMATS, type AgentFormat } from "./llm-agent/step-format.ts";
import { AGENT_LIMITS } from "./llm-agent/limits.ts";
import { MAX_CHUNKS } from "./data/registry.ts";
import type { EngineEvent } from "./events.ts";
import { isMainModule } from "./util/main-module.ts";

/** `preset=NAME` may be given like any override; pull it out. */
function splitPreset(args: string[]): { preset?: string; overrides: string[] } {
  let preset: string | undefined;
  const overrides: string[] = [];
  for (const a of args) {
    const o = a.includes("=") ? parseOverride(a) : null;
    if (o && o.key === "preset") preset = String(o.value);
    else overrides.push(a);
  }
  return { preset, overrides };
}

function printer(quiet: boolean): (e: EngineEvent) => void {
  const bar = new ProgressLine();
  return (e) => {
    if (quiet) return;
    if (e.type === "progress") bar.update(e.phase, e.done, e.total, e.message ?? "", e.etaSeconds);
    else if (e.type === "log") bar.log(`[${e.level}] ${e.message}`);
    else if (e.type === "sweep_point") {
      const p = e.point;
      bar.log(`${p.label.padEnd(5)} ${String(p.numChunks).padStart(7)} chunks ≈${p.tokens} tok | Q-RAG cov ${p.qrag.coverage.toFixed(3)} f1@${p.threshold} ${p.qragFiltered.f1.toFixed(3)}${p.qragPruned ? ` +prune cov ${p.qragPruned.coverage.toFixed(3)} f1 ${p.qragPruned.f1.toFixed(3)}` : ""} | BM25 cov ${p.bm25?.coverage.toFixed(3) ?? "–"} | dense cov ${p.dense?.coverage.toFixed(3) ?? "–"} | ${p.episodeSeconds.toFixed(2)} s/episode${p.reader ? ` | reader acc ${p.reader.accuracy.toFixed(3)} [${p.reader.ci?.low.toFixed(3) ?? "–"}, ${p.reader.ci?.high.toFixed(3) ?? "–"}] ${p.reader.failures} failed, ${p.reader.msPerAnswer.toFixed(0)} ms/answer` : ""}`);
    }
  };
}

/** Files and folders a config names (datasets, noise books) are read only from inside this folder. */
const DATA_ROOT_OPTION = ["--data-root <dir>", "the only folder config paths may name; relative paths start there (default QRAG_DATA_ROOT, else data/)", (v: string) => path.resolve(v)] as const;

/** The Q > threshold stopping filter of eval, sweep and eval-official (the paper's 0.5). */
const THRESHOLD_OPTION = ["--threshold <q>", "Q-threshold of the stopping filter", numberFlag("--threshold", -1e6, 1e6), 0.5] as const;

/** Test samples one eval/sweep command may draw (per length); larger runs belong in several commands. */
const MAX_EVAL_SAMPLES = 100_000;

interface AgentFlags {
  model: string; modelUrl?: string; retriever: string; checkpoint?: string; task?: string; lengths: string; samples: number;
  format: AgentFormat; maxSteps: number; maxTokens: number; docsPerQuery: number; constrain: boolean;
  modelTimeout?: number; modelThreads?: number; modelContext?: number; modelStream?: boolean; out?: string; dataRoot?: string; quiet?: boolean;
}

/** Where the CLI writes: the process's stdout and stderr, or a test's buffers. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

const PROCESS_IO: CliIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) };

/**
 * The commands. In the process (PROCESS_IO) commander's own errors, --help and --version print and
 * exit as commander does; given other io (tests) they are written there and thrown as a
 * CommanderError carrying the exit code.
 */
function qragProgram(io: CliIo, setExit: (code: number) => void): Command {
  const out = (v: string) => io.out(`${v}\n`);
  const program = new Command();
  if (io !== PROCESS_IO) program.exitOverride().configureOutput({ writeOut: (t) => io.out(t), writeErr: (t) => io.err(t) });
  program.name("qrag").description("Q-RAG engine: train, evaluate and sweep multi-step retrievers").version(ENGINE_VERSION);

  program
    .command("train")
    .description("train a retriever; arguments are preset=NAME, group choices (envs=…, algo=…) and key=value overrides")
    .argument("[overrides...]", "preset=NAME, envs=babilong, envs.task=qa2, steps_count=3000, …")
    .option("--resume <dir>", "resume from a checkpoint or run folder")
    .option("--run-dir <dir>", "where checkpoints, metrics.jsonl and episodes.jsonl go")
    .option(...DATA_ROOT_OPTION)
    .option("-q, --quiet", "no progress output")
    .action(async (args: string[], o: { resume?: string; runDir?: string; dataRoot?: string; quiet?: boolean }) => {
      const { train } = await import("./training/train.ts");
      const { preset, overrides } = splitPreset(args);
      let config;
      if (o.resume && !preset && overrides.length === 0) {
        const { loadCheckpoint } = await import("./training/checkpoint.ts");
        config = loadCheckpoint<{ config: ReturnType<typeof resolveConfig> }>(o.resume).state.config;
      } else {
        config = resolveConfig({ preset, overrides });
      }
      const ac = new AbortController();
      process.once("SIGINT", () => {
        process.stderr.write("\ninterrupted: saving a checkpoint…\n");
        ac.abort();
      });
      const res = await train(config, { onEvent: printer(Boolean(o.quiet)), signal: ac.signal, resumeFrom: o.resume, runDir: o.runDir, dataRoot: o.dataRoot });
      out(JSON.stringify({ status: res.status, runDir: res.runDir, updates: res.updates, step: res.step, backend: res.backend, lastEval: res.lastEval }, null, 2));
    });

  program
    .command("eval")
    .description("greedy evaluation of a checkpoint on the test split")
    .argument("<checkpoint>", "checkpoint folder or run folder")
    .option("--samples <n>", "number of test samples", intFlag("--samples", 1, MAX_EVAL_SAMPLES))
    .option("--num-sentences <n>", "haystack size in chunks (BabiLong)", intFlag("--num-sentences", 1, MAX_CHUNKS))
    .option("--never-terminate", "run every episode to max_steps (no ground-truth oracle stop)")
    .option(...THRESHOLD_OPTION)
    .option("--stop <rule>", "stopping rule for the filtered metrics instead: q-threshold:Q, margin:δ, drop:ρ, soft-v:τ, q-and-drop:Q,ρ, first-k:K, prune:Q,τ (needs --never-terminate), elbow, keep-all")
    .option("--out <file>", "write one JSON line per episode")
    .option(...DATA_ROOT_OPTION)
    .option("-q, --quiet", "no progress output")
    .action(async (ckpt: string, o: { samples?: number; numSentences?: number; neverTerminate?: boolean; threshold: number; stop?: string; out?: string; dataRoot?: string; quiet?: boolean }) => {
      const { evaluate } = await import("./evaluation/evaluate.ts");
      const { parseStopRule } = await import("./evaluation/stop-rules.ts");
      let stop;
      try {
        stop = o.stop === undefined ? undefined : parseStopRule(o.stop);
      } catch (e) {
        throw new InputError((e as Error).message);
      }
      const onEvent = printer(Boolean(o.quiet));
      const r = await evaluate({ checkpoint: ckpt, numSamples: o.samples, numSentences: o.numSentences, neverTerminate: o.neverTerminate, threshold: o.threshold, stop, episodesFile: o.out, dataRoot: o.dataRoot, onEvent: (e) => e.type !== "episode" && onEvent(e) });
      out(JSON.stringify({ backend: r.backend, ...r.summary }, null, 2));
    });

  addReaderFlags(program
    .command("sweep"))
    .description("context-length sweep of a BabiLong checkpoint with BM25 and dense baselines")
    .argument("<checkpoint>", "checkpoint folder or run folder")
    .option("--lengths <list>", "haystack sizes in chunks", "50,160,1200,4600,40000,400000")
    .option("--samples <n>", "samples per length (default 100 / 20 / 3 by size)", intFlag("--samples", 1, MAX_EVAL_SAMPLES))
    .option(...THRESHOLD_OPTION)
    .option("--oracle-stop", "stop episodes at the ground-truth completion oracle")
    .option("--out <file>", "sweep points as JSONL")
    .option("--episodes <file>", "episode records as JSONL")
    .option(...DATA_ROOT_OPTION)
    .option("-q, --quiet", "no progress output")
    .action(async (ckpt: string, o: { lengths: string; samples?: number; threshold: number; oracleStop?: boolean; out?: string; episodes?: string; dataRoot?: string; quiet?: boolean } & ReaderFlags) => {
      const lengths = intList("--lengths", o.lengths, 1, MAX_CHUNKS);
      const reader = readerSpecFrom(o);
      const { sweep } = await import("./evaluation/sweep.ts");
      const points = await sweep({ checkpoint: ckpt, lengths, samples: o.samples, threshold: o.threshold, neverTerminate: !o.oracleStop, outFile: o.out, episodesFile: o.episodes, dataRoot: o.dataRoot, onEvent: printer(Boolean(o.quiet)), reader });
      out(JSON.stringify(points, null, 2));
    });

  // --- eval-official (issue 11): the published BabiLong test files ---
  addReaderFlags(program
    .command("eval-official"))
    .description("evaluate a checkpoint on the published BabiLong test files (input/question/target rows; .json, .jsonl, .parquet), per length")
    .requiredOption("--checkpoint <dir>", "checkpoint folder or run folder")
    .requiredOption("--files <paths...>", "files in the data root, one per task and length (qa1/4k.parquet, …)")
    .option("--samples <n>", "at most N samples per length", intFlag("--samples", 1, MAX_EVAL_SAMPLES))
    .option(...THRESHOLD_OPTION)
    .option("--oracle-stop", "stop episodes at the ground-truth completion oracle")
    .option("--out <file>", "one JSON line per length")
    .option(...DATA_ROOT_OPTION)
    .option("-q, --quiet", "no progress output")
    .action(async (o: { checkpoint: string; files: string[]; samples?: number; threshold: number; oracleStop?: boolean; out?: string; dataRoot?: string; quiet?: boolean } & ReaderFlags) => {
      const reader = readerSpecFrom(o);
      const { evalOfficial, formatOfficialResult } = await import("./evaluation/official.ts");
      const onEvent = printer(Boolean(o.quiet));
      const res = await evalOfficial({ checkpoint: o.checkpoint, files: o.files, samples: o.samples, threshold: o.threshold, neverTerminate: !o.oracleStop, outFile: o.out, dataRoot: o.dataRoot, onEvent, reader });
      for (const r of res) io.err(formatOfficialResult(r) + "\n");
      out(JSON.stringify(res, null, 2));
    });

  // --- agent (issue 30): an LLM that reasons and retrieves step by step (R3-RAG's format) ---
  program
    .command("agent")
    .description("an LLM alternates reasoning and search queries until it answers (R3-RAG's step format), over a run's test samples")
    .requiredOption("--model <spec>", "gguf:FILE (a GGUF model in the data root) or openai:MODEL (with --model-url; key from QRAG_READER_API_KEY)")
    .option("--model-url <url>", "base URL of the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    .requiredOption("--retriever <kind>", "bm25, dense (with --checkpoint) or a run / checkpoint folder (Q-RAG's retriever)")
    .option("--checkpoint <dir>", "the run whose test samples are used (the ones `qrag sweep` scores); dense's encoders")
    .option("--task <name>", "bAbI task qa1..qa5 (default qa1, or the checkpoint's)")
    .option("--lengths <list>", "haystack sizes in chunks", "50")
    .option("--samples <n>", "samples per length", intFlag("--samples", 1, AGENT_LIMITS.samples), 20)
    .addOption(new Option("--format <f>", "json: one {kind, text} step per call, constrained where the provider can (general instruct models); r3rag: R3-RAG's own text format (its released models)").choices(AGENT_FORMATS).default("json"))
    .option("--max-steps <n>", "model calls before the answer is forced", intFlag("--max-steps", 1, AGENT_LIMITS.maxCalls), 10)
    .option("--max-tokens <n>", "tokens per model call", intFlag("--max-tokens", 1, AGENT_LIMITS.maxTokens), 256)
    .option("--docs-per-query <k>", "chunks retrieved per query", intFlag("--docs-per-query", 1, AGENT_LIMITS.k), 3)
    .option("--no-constrain", "json format: no grammar / response_format on the steps")
    .option("--model-timeout <s>", "seconds per model call (default 120)", numberFlag("--model-timeout", 0.001, 86_400))
    .option("--model-threads <n>", "llama.cpp CPU threads (default half the cores)", intFlag("--model-threads", 1, 1024))
    .option("--model-context <n>", "llama.cpp context window in tokens (default the model's, at most 4096)", intFlag("--model-context", 64, 1_048_576))
    .option("--model-stream", "stream the endpoint's replies")
    .option("--out <file>", "one JSON line per sample, then a summary line per length")
    .option(...DATA_ROOT_OPTION)
    .option("-q, --quiet", "no progress output")
    .action(async (o: AgentFlags) => {
      const lengths = intList("--lengths", o.lengths, 1, MAX_CHUNKS);
      parseModelSpec(o.model, o.modelUrl); // a bad spec or URL fails before anything loads
      const { runAgent } = await import("./llm-agent/run.ts");
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      const onEvent = printer(Boolean(o.quiet));
      const model = { spec: o.model, url: o.modelUrl, threads: o.modelThreads, contextSize: o.modelContext, stream: o.modelStream, ...(o.modelTimeout !== undefined ? { timeoutMs: Math.round(o.modelTimeout * 1000) } : {}) };
      const res = await runAgent({
        model, retriever: o.retriever, checkpoint: o.checkpoint, task: o.task, lengths, samples: o.samples, format: o.format,
        maxCalls: o.maxSteps, maxTokens: o.maxTokens, k: o.docsPerQuery, constrain: o.constrain, outFile: o.out, dataRoot: o.dataRoot, onEvent, signal: ac.signal,
      });
      for (const s of res.summaries) io.err(`${String(s.numChunks).padStart(7)} chunks | ${s.retriever} | acc ${s.accuracy.toFixed(3)} [${s.ci?.low.toFixed(3) ?? "–"}, ${s.ci?.high.toFixed(3) ?? "–"}] n=${s.n} | coverage ${s.coverage.toFixed(3)} | ${s.meanSteps.toFixed(1)} steps, ${s.meanCalls.toFixed(1)} calls | ${s.failures} failed | ${s.msPerSample.toFixed(0)} ms/sample\n`);
      out(JSON.stringify(res.summaries, null, 2));
    });

  program
    .command("babi-check")
    .description("re-derive every answer and supporting-fact set of real bAbI files with the simulator's rules")
    .argument("<files...>", "bAbI v1.2 task files")
    .action(async (files: string[]) => {
      const { checkBabiFiles, formatCheckReport } = await import("./data/babi/check.ts");
      const r = checkBabiFiles(files);
      out(formatCheckReport(r));
      setExit(r.agree === r.total ? 0 : 1);
    });

  program
    .command("demo")
    .description("train the default CPU preset on BabiLong qa1 for a few minutes, then sweep it (what `npm start` runs)")
    .option("--steps <n>", "optimizer steps", intFlag("--steps", 1, 10_000_000), 400)
    .action(async (o: { steps: number }) => {
      const { train } = await import("./training/train.ts");
      const { sweep } = await import("./evaluation/sweep.ts");
      const config = resolveConfig({ preset: "babilong-cpu", overrides: ["envs.task=qa1", `steps_count=${o.steps}`, "eval_interval=100", "name=demo-qa1"] });
      const onEvent = printer(false);
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      const res = await train(config, { onEvent, signal: ac.signal });
      if (res.status !== "completed") return;
      await sweep({ checkpoint: path.join(res.runDir, "checkpoints", "best"), lengths: [50, 160, 1200, 4600], samples: 50, onEvent, signal: ac.signal, outFile: path.join(res.runDir, "sweep.jsonl") });
      out(`run folder: ${res.runDir}`);
    });

  program
    .command("config")
    .description("print the resolved config of a preset and overrides (validated)")
    .argument("[overrides...]")
    .addOption(new Option("--json", "print JSON instead of YAML"))
    .action((args: string[], o: { json?: boolean }) => {
      const { preset, overrides } = splitPreset(args);
      const c = resolveConfig({ preset, overrides });
      out(o.json ? JSON.stringify(c, null, 2) : YAML.stringify(c));
    });

  program
    .command("bench")
    .description("run the benchmarks (JSON to stdout and bench-results/)")
    .option("--parts <list>", "comma-separated parts to run")
    .option("--tasks <list>", "learning / precision parts: comma-separated tasks (qa1,…,qa5)")
    .option("--seeds <list>", "learning part: comma-separated seeds, one training per seed (mean ± std across them)")
    .option("--lengths <list>", "precision part: comma-separated haystack sizes in chunks (default 50,1200,40000); niah part: GPT-2 tokens (default 4096,131072,1048576)")
    .option("--variants <list>", "niah part: comma-separated RULER variants (default all 8)")
    .option("--samples <list>", "niah part: samples per length, one per --lengths entry (default 200 / 100 / 30 by haystack chunks)")
    .option("--set <key=value>", "learning / niah parts: a config override for every run they train (repeatable)", (v: string, prev: string[] = []) => [...prev, v])
    .option("--tag <name>", "learning / niah parts: runs under runs/<name>/, the niah file as bench-results/niah-<name>.json")
    .option("--checkpoint <dir>", "precision part: evaluate this checkpoint (one --tasks entry) instead of runs/bench-learning-<task>; writes bench-results/precision-<task>-<run folder>.json")
    .option("--reuse", "niah part: reuse trained checkpoints (runs/bench-niah-*) and keep bench-results/niah.json's points not measured again")
    .option("--out <file>", "JSON output file")
    .option("--backend <name>", "tfjs backend (as QRAG_BACKEND): auto, webgpu, wasm, cpu, …")
    .option("--sizes <list>", "matmul part: comma-separated n for n×n×n products (default 512; 512…4096 on webgpu)")
    .action(async (o: { parts?: string; tasks?: string; seeds?: string; lengths?: string; variants?: string; samples?: string; reuse?: boolean; set?: string[]; tag?: string; checkpoint?: string; out?: string; backend?: string; sizes?: string }) => {
      const { runBench } = await import("./bench/main.ts");
      // bounds: seeds fit the RNG's 32 bits; lengths are chunks (precision) or GPT-2 tokens (niah, 10M at most)
      const ints = (flag: string, list: string | undefined, min: number, max: number) => (list === undefined ? undefined : intList(flag, list, min, max));
      if (o.tag !== undefined && !/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/.test(o.tag)) throw new InputError(`--tag: "${o.tag}" must be a plain folder name (letters, digits, . _ -; at most 64)`);
      for (const a of o.set ?? []) parseOverride(a); // a malformed override fails now, not after an hour of benchmarks
      const res = await runBench({ parts: o.parts?.split(","), tasks: o.tasks?.split(","), seeds: ints("--seeds", o.seeds, 0, 2 ** 31 - 1), lengths: ints("--lengths", o.lengths, 1, 16_000_000), variants: o.variants?.split(","), samples: ints("--samples", o.samples, 1, 100_000), reuse: o.reuse, overrides: o.set, tag: o.tag, checkpoint: o.checkpoint, outFile: o.out, backend: o.backend, sizes: ints("--sizes", o.sizes, 1, MAX_MATMUL_SIZE) });
      const file = o.out ?? path.resolve("bench-results", "latest.json");
      fs.mkdirSync(path.dirname(file), { recursive: true });
      out(JSON.stringify(res, null, 2));
    });

  return program;
}

/**
 * Runs the qrag command line on `argv` (the arguments after the script's name) and resolves to
 * the exit code: 0, 1 when babi-check disagrees, 2 for a user error (one line, "qrag: …"; other
 * errors keep their stack), or commander's own code for its errors (unknown option, missing
 * argument: 1). Flags are checked before anything is loaded or trained.
 */
export async function runQrag(argv: readonly string[], io: CliIo = PROCESS_IO): Promise<number> {
  let code = 0;
  try {
    await qragProgram(io, (c) => (code = c)).parseAsync([...argv], { from: "user" });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    const err = e as Error;
    // user errors (and a reader endpoint that fails the run) get one clear line; anything else keeps its stack for bug reports
    io.err(err instanceof InputError || err.name === "ConfigError" || err.name === "ReaderCallError" ? `qrag: ${err.message}\n` : `qrag: ${err.stack ?? err.message}\n`);
    return 2;
  }
}

if (isMainModule(import.meta.url)) {
  runQrag(process.argv.slice(2)).then((code) => {
    if (code !== 0) process.exitCode = code;
  });
}
