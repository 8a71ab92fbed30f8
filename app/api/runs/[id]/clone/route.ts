import { runClone } from "../../../../../server/api/runs.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function POST(req: Request, { params }: { params: Promise<{ id: string }> }) {
  return runClone.POST(req, { params: await params });
}
