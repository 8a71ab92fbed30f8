import type { NextConfig } from "next";

const config: NextConfig = {
  // socket.io, Prisma's driver adapters and tfjs stay Node-side and unbundled
  serverExternalPackages: ["socket.io", "better-sqlite3", "pg", "@tensorflow/tfjs", "@tensorflow/tfjs-backend-wasm"],
  typedRoutes: false,
};

export default config;
