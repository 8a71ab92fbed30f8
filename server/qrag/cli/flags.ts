/**
 * Bounded number parsers for command-line flags. commander reports an InvalidArgumentError with
 * the flag's name, so `--samples 1e9` or `--threshold x` fail at once instead of running for hours
 * or comparing against NaN.
 */
import { InvalidArgumentError } from "commander";
import { InputError } from "../errors.ts";

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

/**
 * A comma-separated list of whole numbers in [min, max] (`--lengths 50,1200`); the error names the
 * flag, the item's place and its text, so a long list's typo is found at once.
 */
export function intList(flag: string, list: string, min: number, max: number): number[] {
  return list.split(",").map((s, i) => {
    const n = Number(s);
    if (s.trim() === "" || !Number.isInteger(n) || n < min || n > max) throw new InputError(`${flag}: item ${i + 1} ("${s}") is not a whole number from ${min} to ${max}`);
    return n;
  });
}
