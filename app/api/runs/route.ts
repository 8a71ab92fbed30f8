import { runsCollection } from "../../../server/api/runs.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request) {
  return runsCollection.GET(req, { params: {} });
}

export async function POST(req: Request) {
  return runsCollection.POST(req, { params: {} });
}
