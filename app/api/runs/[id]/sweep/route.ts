import { runSweep } from "../../../../../server/api/runs.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, { params }: { params: Promise<{ id: string }> }) {
  return runSweep.GET(req, { params: await params });
}
