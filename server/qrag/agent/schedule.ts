/**
 * Learning-rate multipliers (docs/method.md §3.5, reference `rl/optim.py`), as a function of the
 * number of optimizer steps taken. The exploration/soft-value temperature follows the same factor:
 * α_t = α0·lr_t/lr0 = α0·lrFactor(t).
 */
type ScheduleType = "warmup_linear" | "cosine" | "constant";

interface ScheduleConfig {
  type: ScheduleType;
  warmup: number;
  total: number;
  /** Final fraction of the base LR. */
  ratio: number;
}

export function lrFactor(step: number, cfg: ScheduleConfig): number {
  const { warmup, total, ratio } = cfg;
  switch (cfg.type) {
    case "warmup_linear":
      // Warm-up reaches only 1−ratio, then jumps to 1 at s = warmup (reference behaviour).
      if (step < warmup) return ((1 - ratio) * step) / warmup;
      return Math.max(0, 1 + ((ratio - 1) * (step - warmup)) / Math.max(1, total - warmup));
    case "cosine": {
      if (step < warmup) return step / warmup;
      // Quarter cosine: cos goes from 1 to 0 over [warmup, total]; progress is held at 1 after
      // total so the factor stays at ratio rather than turning negative.
      const p = Math.min(1, (step - warmup) / Math.max(1, total - warmup));
      return ratio + (1 - ratio) * Math.cos((Math.PI / 2) * p);
    }
    case "constant":
      return step < warmup ? step / warmup : 1;
  }
}
