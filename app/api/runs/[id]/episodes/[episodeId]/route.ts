import { runEpisode } from "../../../../../../server/api/runs.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, { params }: { params: Promise<{ id: string; episodeId: string }> }) {
  return runEpisode.GET(req, { params: await params });
}
