"use client";
/**
 * An agent episode's steps in R3-RAG's format — reason, query, retrieve (the chunk ids, gold ones
 * marked), answer — each with its kind, its model call's tokens and time. Model and chunk text is
 * untrusted: rendered as text, never as HTML. Clicking a step moves the player there.
 */
import type { AgentStep } from "../../lib/contracts/index.ts";

const KIND_LABEL: Record<AgentStep["kind"], string> = { reason: "reason", query: "query", retrieve: "retrieved", answer: "answer" };

export function AgentSteps({ steps, current, onPick }: { steps: readonly AgentStep[]; current: number; onPick: (i: number) => void }) {
  return (
    <ol className="stack" style={{ gap: 6, listStyle: "none", padding: 0, margin: 0 }} data-testid="agent-steps">
      {steps.map((s, i) => (
        <li
          key={i}
          className="panel"
          style={{ padding: "6px 10px", cursor: "pointer", outline: i === current ? "2px solid #6d28d9" : undefined }}
          onClick={() => onPick(i)}
          data-testid="agent-step"
          data-kind={s.kind}
          data-current={i === current ? "yes" : "no"}
        >
          <div className="row small">
            <span className={`badge ${s.kind === "answer" ? "ok" : "plain"}`} data-testid="agent-step-kind">
              {KIND_LABEL[s.kind]}
            </span>
            {s.unparsed && <span className="badge off">output did not parse</span>}
            {s.forced && <span className="badge off">forced answer</span>}
            {s.ids && (
              <span className="mono" data-testid="agent-step-ids">
                {s.ids.map((id, k) => (
                  <span key={k} style={s.gold?.[k] ? { color: "#b7791f", fontWeight: 600 } : undefined} title={s.gold?.[k] ? "a supporting fact" : undefined}>
                    #{id}
                    {s.gold?.[k] ? "★" : ""}{k < s.ids!.length - 1 ? " " : ""}
                  </span>
                ))}
              </span>
            )}
            <span className="spacer" style={{ flex: 1 }} />
            <span className="muted">
              {s.tokens ? `${s.tokens.prompt.toLocaleString()} + ${s.tokens.completion.toLocaleString()} tokens · ` : ""}
              {Math.round(s.ms)} ms
            </span>
          </div>
          <pre className="mono small" style={{ whiteSpace: "pre-wrap", margin: "4px 0 0", maxHeight: 200, overflow: "auto" }} data-testid="agent-step-text">
            {s.text}
          </pre>
        </li>
      ))}
    </ol>
  );
}
