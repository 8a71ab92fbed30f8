-- Executor jobs kept per run (issue 29): a run's Slurm jobs, one row each, so the run page lists its
-- attempts with their state, node and times after a job ended and the run got a new one.
-- CreateTable
CREATE TABLE "RunJob" (
    "id" SERIAL NOT NULL,
    "runId" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "jobId" TEXT,
    "state" TEXT NOT NULL,
    "node" TEXT,
    "reason" TEXT,
    "submittedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "endedAt" TIMESTAMP(3),

    CONSTRAINT "RunJob_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "RunJob_runId_number_key" ON "RunJob"("runId", "number");

-- AddForeignKey
ALTER TABLE "RunJob" ADD CONSTRAINT "RunJob_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
