-- Live job output and sbatch retries (issue 29): how much of the current Slurm job's stdout and
-- stderr is already in the run's log, and how many sbatch calls in a row got no answer.
-- AlterTable
ALTER TABLE "Run" ADD COLUMN "jobOutBytes" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "Run" ADD COLUMN "jobErrBytes" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "Run" ADD COLUMN "sbatchFails" INTEGER NOT NULL DEFAULT 0;
