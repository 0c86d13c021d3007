/**
 * A promise that rejects when `promise` has not settled within `ms` (the work itself goes on),
 * with `timedOut()`'s error when given.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  timedOut = () => new Error(`no answer within ${ms} ms`),
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
