/** True when the module at `moduleUrl` (its `import.meta.url`) is the script node was started with. */
import path from "node:path";
import { fileURLToPath } from "node:url";

export function isMainModule(moduleUrl: string): boolean {
  return !!process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(moduleUrl);
}
