/**
 * Bounded number parsers for command-line flags. commander reports an InvalidArgumentError with
 * the flag's name, so `--samples 1e9` or `--threshold x` fail at once instead of running for hours
 * or comparing against NaN.
 */
import { InvalidArgumentError } from "commander";

/** A whole number in [min, max]. */
export const intFlag = (name: string, min: number, max: number) => (v: string): number => {
  const n = Number(v);
  if (v.trim() === "" || !Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
  return n;
};

/** A finite number in [min, max]. */
export const numberFlag = (name: string, min: number, max: number) => (v: string): number => {
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
  return n;
};
