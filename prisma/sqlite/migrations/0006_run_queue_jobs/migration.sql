-- Queues, resource requests and executor jobs on runs (issue 29): a run names its queue and what it
-- asks for; a Slurm queue's run records its job id in the transaction that submits it.
-- AlterTable
ALTER TABLE "Run" ADD COLUMN "queue" TEXT NOT NULL DEFAULT 'workers';
ALTER TABLE "Run" ADD COLUMN "resources" TEXT NOT NULL DEFAULT '{}';
ALTER TABLE "Run" ADD COLUMN "jobId" TEXT;
ALTER TABLE "Run" ADD COLUMN "jobState" TEXT;
ALTER TABLE "Run" ADD COLUMN "jobNode" TEXT;
ALTER TABLE "Run" ADD COLUMN "jobReason" TEXT;
ALTER TABLE "Run" ADD COLUMN "jobCount" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "Run" ADD COLUMN "jobTokenId" INTEGER;
-- CreateIndex
CREATE INDEX "Run_jobId_idx" ON "Run"("jobId");
