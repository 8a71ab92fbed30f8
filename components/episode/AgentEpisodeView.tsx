"use client";
/**
 * One sample of an uploaded agent evaluation (`qrag agent`, phase "agent"): the question, the
 * agent's answer and the benchmark's score of it, its cost, the haystack strip with each retrieval
 * marked as the player reaches it, and every step (AgentSteps). Model text is rendered as text.
 */
import type { AgentSample } from "../../lib/contracts/index.ts";
import { agentPickCursor } from "../../lib/analysis/agent-replay.ts";
import { fmtNum } from "../../lib/format.ts";
import { useAutoplay } from "../../lib/hooks/useAutoplay.ts";
import { useStepCursor } from "../../lib/hooks/useStepCursor.ts";
import { AgentSteps } from "./AgentSteps.tsx";
import { HaystackStrip } from "./HaystackStrip.tsx";
import { StepPlayer } from "./StepPlayer.tsx";

export function AgentEpisodeView({ sample, runId, episodeId }: { sample: AgentSample; runId: string; episodeId: string }) {
  const cursor = useStepCursor(sample.steps.length);
  const play = useAutoplay(sample.steps.length, cursor.step, cursor.go);
  const ok = sample.correct >= 1;
  return (
    <div className="stack" data-testid="agent-episode">
      <div className="grid2">
        <section className="panel">
          <h3>Question</h3>
          <p style={{ fontSize: 16, margin: "0 0 10px" }} data-testid="episode-question">
            {sample.question}
          </p>
          <dl className="kv">
            <dt>target</dt>
            <dd>
              <b>{sample.answer}</b>
            </dd>
            <dt>sample</dt>
            <dd className="mono">{sample.id}</dd>
            <dt>context</dt>
            <dd>{sample.num_chunks.toLocaleString()} chunks</dd>
            <dt>agent</dt>
            <dd className="mono small">
              {sample.model} · retriever {sample.retriever}
            </dd>
          </dl>
        </section>
        <section className="panel">
          <h3>Answer</h3>
          <dl className="kv">
            <dt>answer</dt>
            <dd>
              <b data-testid="agent-answer">{sample.prediction || "(empty)"}</b>{" "}
              <span className={`badge ${sample.failure ? "off" : ok ? "ok" : sample.correct > 0 ? "plain" : "off"}`} data-testid="agent-verdict">
                {sample.failure ? `failed: ${sample.failure.kind}` : ok ? "correct" : sample.correct > 0 ? `partly correct (${fmtNum(sample.correct, 2)})` : "wrong"}
              </span>
              {sample.forced && <span className="muted small"> · forced ({sample.forced.replace("_", " ")})</span>}
            </dd>
            <dt>score</dt>
            <dd data-testid="agent-score">
              {fmtNum(sample.correct, 3)}
              {sample.f1 !== undefined ? ` · token F1 ${fmtNum(sample.f1, 3)}` : ""}
            </dd>
            <dt>retrieval</dt>
            <dd>
              {sample.pred_idx.length} chunks · coverage {fmtNum(sample.metrics.coverage, 3)} · recall {fmtNum(sample.metrics.recall, 3)}
            </dd>
            <dt>cost</dt>
            <dd className="small">
              {sample.calls} model calls · {sample.tokens.prompt.toLocaleString()} + {sample.tokens.completion.toLocaleString()} tokens · {Math.round(sample.ms)} ms ({Math.round(sample.modelMs)} in the model)
              {sample.retries ? ` · ${sample.retries} retries` : ""}
            </dd>
            {sample.failure && (
              <>
                <dt>failure</dt>
                <dd className="error-text small">{sample.failure.message}</dd>
              </>
            )}
          </dl>
        </section>
      </div>
      <section className="panel stack" data-testid="replay">
        <div className="row">
          <h2 style={{ margin: 0 }}>Replay</h2>
          {sample.steps.length > 0 && <StepPlayer count={sample.steps.length} cursor={cursor} play={play} />}
        </div>
        <HaystackStrip runId={runId} episodeId={episodeId} numChunks={sample.num_chunks} gold={sample.sf_idx} picks={sample.pred_idx} current={agentPickCursor(sample.steps, cursor.step)} />
        <AgentSteps steps={sample.steps} current={cursor.step} onPick={cursor.go} />
      </section>
    </div>
  );
}
