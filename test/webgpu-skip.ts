/**
 * Whether this machine can run the webgpu tests: an adapter (Mesa's lavapipe on CPU-only
 * machines). Without one they are skipped with the reason, except under QRAG_REQUIRE_WEBGPU=1
 * (.ci/run sets it once lavapipe is installed), where they run and fail.
 */
import { installWebgpu } from "../server/qrag/backend/webgpu.ts";

/** The reason no adapter was found ("" when one was). */
export const webgpuMissing: string = await installWebgpu(true).then(
  () => "",
  (e: unknown) => (e as Error).message,
);

/** A node:test `skip` option for tests that need webgpu. */
export const webgpuSkip: string | false = webgpuMissing && process.env.QRAG_REQUIRE_WEBGPU !== "1" ? `no WebGPU adapter here (${webgpuMissing})` : false;
