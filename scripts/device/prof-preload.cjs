// NODE_OPTIONS="--require …/prof-preload.cjs" (NODE_OPTIONS refuses --cpu-prof): a CPU profile of
// every Node process it starts, written to $QRAG_PROF_DIR at exit (process.exit included).
const inspector = require("node:inspector");
const fs = require("node:fs");
const path = require("node:path");
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
