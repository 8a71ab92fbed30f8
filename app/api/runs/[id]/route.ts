import { runItem } from "../../../../server/api/runs.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, { params }: { params: Promise<{ id: string }> }) {
  return runItem.GET(req, { params: await params });
}

export async function PATCH(req: Request, { params }: { params: Promise<{ id: string }> }) {
  return runItem.PATCH(req, { params: await params });
}
