-- Dashboards get an owner (issue 26, defect 6): the user who saved it edits and deletes it.
-- AlterTable
ALTER TABLE "Dashboard" ADD COLUMN "createdBy" TEXT;
