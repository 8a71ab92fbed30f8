/** The worker's socket type, typed by the /workers contract; main.ts opens it, the runner and batcher write to it. */
import type { Socket } from "socket.io-client";
import type { ServerToWorker, WorkerToServer } from "../../lib/contracts/index.ts";

export type WorkerSocket = Socket<ServerToWorker, WorkerToServer>;
