/** Requests one API URL every 50 ms until stopped, as a dashboard would through a failover. */
export function pollApi(url: string, token: string) {
  /** Each answer's status (0: no answer), how long it took, and when it came (Date.now()). */
  const answers: { status: number; ms: number; at: number }[] = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const sent = performance.now();
      const status = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
        .then(async (response) => {
          await response.arrayBuffer();
          return response.status;
        })
        .catch(() => 0);
      answers.push({ status, ms: performance.now() - sent, at: Date.now() });
      await Bun.sleep(50);
    }
  })();
  return {
    answers,
    async stop() {
      stopped = true;
      await done;
    },
  };
}
