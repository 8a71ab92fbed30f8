-- The platform never stored sweeps (nothing produced them); the table goes until sweeps are a feature.
DROP TABLE "SweepPoint";
