import { schema } from "../../../server/api/misc.ts";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request) {
  return schema.GET(req, { params: {} });
}
