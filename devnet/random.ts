/**
 * A small seeded generator (the sfc32 algorithm) so a scenario replays identically from its seed;
 * Math.random cannot be seeded.
 */
import { hexToBytes, keccak256, stringToHex } from "viem";

export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string) {
    const words = new DataView(hexToBytes(keccak256(stringToHex(seed))).buffer);
    this.a = words.getUint32(0);
    this.b = words.getUint32(4);
    this.c = words.getUint32(8);
    this.d = words.getUint32(12);
    // The first outputs of sfc32 still echo the seed words; discard them.
    for (let i = 0; i < 16; i++) this.nextUint32();
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 2 ** 32;
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** Uniform bigint in [1, max]; draws 32 bits at a time, enough for wei amounts. */
  bigintUpTo(max: bigint): bigint {
    let value = 0n;
    for (let bits = 0n; 1n << bits <= max; bits += 32n) {
      value = (value << 32n) | BigInt(this.nextUint32());
    }
    return (value % max) + 1n;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new RangeError("pick from an empty list");
    return item;
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
