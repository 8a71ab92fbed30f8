/**
 * The playground's engine process: forked by the dashboard (pool.ts) per checkpoint, it loads the
 * checkpoint once and answers greedy episodes over pasted documents until the pool ends it (idle,
 * evicted, timed out, server shut down). TensorFlow.js lives here, never in the dashboard's process.
 * It exits with its parent (exit-with-parent.ts), even in the middle of an episode.
 */
import { exitWithParent } from "../worker/exit-with-parent.ts";
import { errorMessage } from "../worker/log.ts";
import { configureEngine } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import type { PlaygroundAgent } from "../qrag/runtime.ts";
import type { PlaygroundReply, PlaygroundRequest } from "./messages.ts";

let agent: Promise<PlaygroundAgent> | null = null;

function send(m: PlaygroundReply): void {
  process.send?.(m);
}

async function handle(m: PlaygroundRequest): Promise<void> {
  if (m.type === "open") {
    if (agent) return;
    agent = import("../qrag/runtime.ts").then(({ openPlaygroundAgent }) => openPlaygroundAgent(m.checkpoint, m.dataRoot));
    try {
      send({ type: "ready", backend: (await agent).backend });
    } catch (e) {
      send({ type: "error", message: errorMessage(e) });
      process.exitCode = 1;
      process.disconnect?.();
    }
    return;
  }
  if (!agent) {
    send({ type: "error", id: m.id, message: "no checkpoint loaded" });
    return;
  }
  try {
    const { record, ms } = await (await agent).run(m.input);
    send({ type: "result", id: m.id, record, ms });
  } catch (e) {
    send({ type: "error", id: m.id, message: errorMessage(e) });
  }
}

if (!process.send) {
  process.stderr.write("engine-child.ts is started by the dashboard's playground (server/playground/pool.ts), not directly\n");
  process.exit(2);
}
configureEngine(settings().engine);
const watching = exitWithParent();
// one request at a time, in order (the pool sends the next only after an answer, but be safe)
let chain = Promise.resolve();
process.on("message", (m: PlaygroundRequest) => {
  chain = chain.then(() => watching).then(() => handle(m));
});
process.on("disconnect", () => process.exit(0));
