-- Sweeps become jobs (Run.kind = sweep, sweepOf → the evaluated run) with their points and episodes
-- (Episode.numChunks); imported runs (kind = imported); saved compare dashboards.
-- DropIndex
DROP INDEX "Episode_runId_update_phase_sampleId_key";

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'train',
ADD COLUMN     "sweepOf" TEXT;

-- AlterTable
ALTER TABLE "Episode" ADD COLUMN     "numChunks" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "SweepPoint" (
    "id" SERIAL NOT NULL,
    "runId" TEXT NOT NULL,
    "numChunks" INTEGER NOT NULL,
    "tokens" DOUBLE PRECISION NOT NULL,
    "samples" INTEGER NOT NULL,
    "point" TEXT NOT NULL,

    CONSTRAINT "SweepPoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Dashboard" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "spec" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Dashboard_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "SweepPoint_runId_numChunks_key" ON "SweepPoint"("runId", "numChunks");

-- CreateIndex
CREATE INDEX "Run_sweepOf_idx" ON "Run"("sweepOf");

-- CreateIndex
CREATE INDEX "Episode_runId_phase_numChunks_idx" ON "Episode"("runId", "phase", "numChunks");

-- CreateIndex
CREATE UNIQUE INDEX "Episode_runId_update_phase_sampleId_numChunks_key" ON "Episode"("runId", "update", "phase", "sampleId", "numChunks");

-- AddForeignKey
ALTER TABLE "SweepPoint" ADD CONSTRAINT "SweepPoint_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

