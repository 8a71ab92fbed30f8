/**
 * Encoder construction. Both encoders share one implementation of clone / copyFrom / polyakFrom /
 * exportWeights / importWeights over their ordered variable list (`BaseEncoder` in base.ts).
 */
import type { EncoderConfig } from "./encoder.ts";
import type { QEncoder } from "./base.ts";
import { BowEncoder } from "./bow.ts";
import { TransformerEncoder } from "./transformer.ts";
import type { Rng } from "../util/rng.ts";
import { HfBertEncoder } from "./hf/encoder.ts";
import { encoderSchema } from "../config/schema.ts";

export type { QEncoder } from "./base.ts";

/**
 * A new encoder of `config.type`, weights drawn from `rng` (deterministic by seed); `hf` reads its
 * weights from the folder `config.path` inside `opts.dataRoot` (model/hf/).
 */
export function createEncoder(config: EncoderConfig, rng: Rng, opts: { dataRoot?: string } = {}): QEncoder {
  switch (config.type) {
    case "bow":
      return new BowEncoder(config, rng);
    case "transformer":
      return new TransformerEncoder(config, rng);
    case "hf":
      return HfBertEncoder.load(config, rng, opts.dataRoot);
    default:
      throw new Error(`unknown encoder type "${String((config as { type: unknown }).type)}" (use bow, transformer or hf)`);
  }
}

/**
 * A full encoder config of `type` for benches and tests: the sizes of `bow` as in docs/method.md
 * §11 and of `transformer` as in docs/workload.md §1.2; every key not set here is the config
 * schema's default (`encoderSchema`, config-schema.ts).
 */
export function defaultEncoderConfig(type: EncoderConfig["type"]): EncoderConfig {
  if (type === "bow") {
    // bow has no layers or heads (0 and 1 are outside the schema's bounds, which are a transformer's)
    return { ...encoderSchema.parse({ type, dim: 128, vocab_size: 16384, hidden: 256 }), layers: 0, heads: 1, max_len: 512, init_std: 0.1 };
  }
  return encoderSchema.parse({ type, dim: 128, vocab_size: 8192, hidden: 512 });
}
