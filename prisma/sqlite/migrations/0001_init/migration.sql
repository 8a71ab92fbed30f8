-- CreateTable
CREATE TABLE "Run" (
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

-- CreateTable
CREATE TABLE "MetricPoint" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "update" INTEGER NOT NULL,
    "value" REAL NOT NULL,
    "wall" REAL NOT NULL,
    CONSTRAINT "MetricPoint_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Episode" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "phase" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "update" INTEGER NOT NULL,
    "sampleId" TEXT NOT NULL,
    "coverage" REAL NOT NULL,
    "f1" REAL NOT NULL,
    "return" REAL NOT NULL,
    "record" TEXT NOT NULL,
    CONSTRAINT "Episode_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "SweepPoint" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "numChunks" INTEGER NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "SweepPoint_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Checkpoint" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "update" INTEGER NOT NULL,
    "path" TEXT NOT NULL,
    "best" BOOLEAN NOT NULL,
    "evalReturn" REAL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Checkpoint_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "EventBatch" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "events" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "EventBatch_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "LogLine" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "level" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "LogLine_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Worker" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "backend" TEXT NOT NULL,
    "device" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'idle',
    "lastSeen" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "runId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "Run_status_createdAt_idx" ON "Run"("status", "createdAt");

-- CreateIndex
CREATE INDEX "Run_createdAt_idx" ON "Run"("createdAt");

-- CreateIndex
CREATE INDEX "MetricPoint_runId_key_update_idx" ON "MetricPoint"("runId", "key", "update");

-- CreateIndex
CREATE UNIQUE INDEX "MetricPoint_runId_key_step_key" ON "MetricPoint"("runId", "key", "step");

-- CreateIndex
CREATE INDEX "Episode_runId_update_idx" ON "Episode"("runId", "update");

-- CreateIndex
CREATE UNIQUE INDEX "Episode_runId_update_phase_sampleId_key" ON "Episode"("runId", "update", "phase", "sampleId");

-- CreateIndex
CREATE UNIQUE INDEX "SweepPoint_runId_numChunks_key" ON "SweepPoint"("runId", "numChunks");

-- CreateIndex
CREATE UNIQUE INDEX "Checkpoint_runId_update_best_key" ON "Checkpoint"("runId", "update", "best");

-- CreateIndex
CREATE UNIQUE INDEX "EventBatch_runId_seq_key" ON "EventBatch"("runId", "seq");

-- CreateIndex
CREATE INDEX "LogLine_runId_id_idx" ON "LogLine"("runId", "id");

