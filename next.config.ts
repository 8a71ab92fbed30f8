import type { NextConfig } from "next";

const config: NextConfig = {
  // socket.io, Prisma's driver adapters and tfjs stay Node-side and unbundled
  serverExternalPackages: ["socket.io", "better-sqlite3", "pg", "@tensorflow/tfjs", "@tensorflow/tfjs-backend-wasm"],
  typedRoutes: false,
  // `npm test` runs tsc after its build (build:test), over the same files and the route types the
  // build wrote (.next/types), so that build skips Next's own pass over them (~30 s)
  typescript: { ignoreBuildErrors: process.env.QRAG_BUILD_TYPECHECKED === "1" },
};

export default config;
