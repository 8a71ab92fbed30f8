// NODE_OPTIONS="--import /abs/…/prof-preload.mjs" QRAG_PROF_DIR=DIR (NODE_OPTIONS refuses
// --cpu-prof): a CPU profile of every Node process started so, written to DIR at exit
// (process.exit included; the inspector session answers synchronously on its own thread).
import inspector from "node:inspector";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";

const dir = process.env.QRAG_PROF_DIR;
if (dir) {
  const s = new inspector.Session();
  s.connect();
  s.post("Profiler.enable");
  s.post("Profiler.setSamplingInterval", { interval: 5000 });
  s.post("Profiler.start");
  process.on("exit", () => {
    s.post("Profiler.stop", (err, r) => {
      if (!err) fs.writeFileSync(path.join(dir, `${path.basename(process.argv[1] ?? "node")}-${process.pid}.cpuprofile`), JSON.stringify(r.profile));
    });
  });
}
