/**
 * A worker's resident memory between slices, held under a ceiling by collecting at once. A
 * slice's logs, reads and rows live for the whole slice, through several young-generation
 * collections, so they die in the old generation, which Bun's collector lets grow for seconds
 * before a full collection: over the 100k chain a worker's memory climbed from 150 to 310 MB
 * between two, whatever the events each slice held. Past the ceiling the heap is collected (a
 * full collection, tens of ms) after a slice is written, when the least is alive; not again
 * until memory has grown by the step since, so memory the process keeps is not collected for
 * after every slice.
 */

/** A worker's ceiling: under the 250 MB it is held to by about what one slice adds. */
export const HEAP_CEILING_BYTES = 160 * 1024 * 1024;

export function createHeapCeiling(ceilingBytes: number, stepBytes = 32 * 1024 * 1024) {
  let floor = Number.NEGATIVE_INFINITY;
  return {
    /** Collects when resident memory is past the ceiling; says whether it did. */
    settle(): boolean {
      const resident = process.memoryUsage.rss();
      if (resident < ceilingBytes || resident < floor + stepBytes) return false;
      Bun.gc(true);
      floor = process.memoryUsage.rss();
      return true;
    },
  };
}
