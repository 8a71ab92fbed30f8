"use client";
/** /playground?run=ID&checkpoint=best|last : a checkpoint over a pasted document (components/playground). */
import { Suspense } from "react";
import { useSearchParams } from "next/navigation";
import { Playground } from "../../components/playground/Playground.tsx";

function PlaygroundPage() {
  const sp = useSearchParams();
  const checkpoint = sp.get("checkpoint") === "last" ? "last" : "best";
  return (
    <main className="stack">
      <div className="page-head" style={{ margin: 0 }}>
        <h1>Playground</h1>
        <span className="muted">a checkpoint retrieves from your document, step by step; nothing is stored unless you save it</span>
      </div>
      <Playground initialRun={sp.get("run") ?? ""} initialCheckpoint={checkpoint} />
    </main>
  );
}

export default function Page() {
  return (
    <Suspense fallback={<main className="empty">Loading…</main>}>
      <PlaygroundPage />
    </Suspense>
  );
}
