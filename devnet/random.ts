/**
 * Seeded randomness for the scenario (pure-rand's xoroshiro128+), so a run replays identically
 * from its seed; Math.random cannot be seeded. This wrapper only adds the picks the scenario needs.
 */
import { uniformBigInt } from "pure-rand/distribution/uniformBigInt";
import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { uniformInt } from "pure-rand/distribution/uniformInt";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import { hexToNumber, keccak256, slice, stringToHex } from "viem";

export class SeededRandom {
  private readonly generator;

  constructor(seed: string) {
    this.generator = xoroshiro128plus(hexToNumber(slice(keccak256(stringToHex(seed)), 0, 4)));
  }

  /** Uniform in [0, 1). */
  next(): number {
    return uniformFloat64(this.generator);
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return uniformInt(this.generator, min, max);
  }

  /** Uniform bigint in [1, max]. */
  bigintUpTo(max: bigint): bigint {
    return uniformBigInt(this.generator, 1n, max);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("pick from an empty list");
    return items[this.int(0, items.length - 1)] as T;
  }

  /** Picks by weight; weights need not sum to 1. */
  weighted<T extends string>(weights: Readonly<Record<T, number>>): T {
    const entries = Object.entries(weights) as [T, number][];
    let roll = this.next() * entries.reduce((sum, [, weight]) => sum + weight, 0);
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    return (entries.at(-1) as [T, number])[0];
  }
}
