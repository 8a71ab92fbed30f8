-- Sweeps become jobs (Run.kind = sweep, sweepOf → the evaluated run) with their points and episodes
-- (Episode.numChunks); imported runs (kind = imported); saved compare dashboards.
-- CreateTable
CREATE TABLE "SweepPoint" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "numChunks" INTEGER NOT NULL,
    "tokens" REAL NOT NULL,
    "samples" INTEGER NOT NULL,
    "point" TEXT NOT NULL,
    CONSTRAINT "SweepPoint_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Dashboard" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "spec" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Run" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "config" TEXT NOT NULL,
    "preset" TEXT,
    "envName" TEXT NOT NULL,
    "task" TEXT NOT NULL,
    "tags" TEXT NOT NULL DEFAULT '[]',
    "notes" TEXT NOT NULL DEFAULT '',
    "workerId" TEXT,
    "backend" TEXT,
    "device" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" DATETIME,
    "finishedAt" DATETIME,
    "wallSeconds" REAL NOT NULL DEFAULT 0,
    "error" TEXT,
    "kind" TEXT NOT NULL DEFAULT 'train',
    "sweepOf" TEXT,
    "parentId" TEXT,
    "resumeFrom" TEXT,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "leaseUntil" DATETIME,
    "lastSeq" INTEGER NOT NULL DEFAULT 0,
    "cancelRequested" BOOLEAN NOT NULL DEFAULT false,
    "progressDone" INTEGER NOT NULL DEFAULT 0,
    "progressTotal" INTEGER NOT NULL DEFAULT 0,
    "summary" TEXT NOT NULL DEFAULT '{}',
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_Run" ("attempt", "backend", "cancelRequested", "config", "createdAt", "device", "envName", "error", "finishedAt", "id", "lastSeq", "leaseUntil", "name", "notes", "parentId", "preset", "progressDone", "progressTotal", "resumeFrom", "startedAt", "status", "summary", "tags", "task", "updatedAt", "wallSeconds", "workerId") SELECT "attempt", "backend", "cancelRequested", "config", "createdAt", "device", "envName", "error", "finishedAt", "id", "lastSeq", "leaseUntil", "name", "notes", "parentId", "preset", "progressDone", "progressTotal", "resumeFrom", "startedAt", "status", "summary", "tags", "task", "updatedAt", "wallSeconds", "workerId" FROM "Run";
DROP TABLE "Run";
ALTER TABLE "new_Run" RENAME TO "Run";
CREATE INDEX "Run_status_createdAt_idx" ON "Run"("status", "createdAt");
CREATE INDEX "Run_createdAt_idx" ON "Run"("createdAt");
CREATE INDEX "Run_sweepOf_idx" ON "Run"("sweepOf");
CREATE TABLE "new_Episode" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "phase" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "update" INTEGER NOT NULL,
    "sampleId" TEXT NOT NULL,
    "numChunks" INTEGER NOT NULL DEFAULT 0,
    "coverage" REAL NOT NULL,
    "f1" REAL NOT NULL,
    "return" REAL NOT NULL,
    "record" TEXT NOT NULL,
    CONSTRAINT "Episode_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Episode" ("coverage", "f1", "id", "phase", "record", "return", "runId", "sampleId", "seq", "step", "update") SELECT "coverage", "f1", "id", "phase", "record", "return", "runId", "sampleId", "seq", "step", "update" FROM "Episode";
DROP TABLE "Episode";
ALTER TABLE "new_Episode" RENAME TO "Episode";
CREATE INDEX "Episode_runId_update_idx" ON "Episode"("runId", "update");
CREATE INDEX "Episode_runId_phase_numChunks_idx" ON "Episode"("runId", "phase", "numChunks");
CREATE UNIQUE INDEX "Episode_runId_update_phase_sampleId_numChunks_key" ON "Episode"("runId", "update", "phase", "sampleId", "numChunks");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE UNIQUE INDEX "SweepPoint_runId_numChunks_key" ON "SweepPoint"("runId", "numChunks");

