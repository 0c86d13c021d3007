/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
/**
 * The example dashboard: a wallet's staked citizens, live from the stream, and its total points
 * over recent blocks from `?block=` answers. Configured by the page's fragment
 * (`#api=…&token=…&address=…`), which browsers never send to the page's server.
 */
import { ApiProblem, type Citizen, createStakingClient, type LiveCitizens } from "../index.ts";

/** Blocks the chart shows. */
const CHART_BLOCKS = 30;

const settings = new URLSearchParams(location.hash.slice(1));
const api = settings.get("api");
const token = settings.get("token");
const address = settings.get("address");

const element = <T extends HTMLElement | SVGElement = HTMLElement>(id: string) =>
  document.getElementById(id) as T;
const show = (state: string, text: string) => {
  const status = element("status");
  status.dataset.state = state;
  status.textContent = text;
};

function fail(message: string) {
  show("error", "stopped");
  const error = element("error");
  error.textContent = message;
  error.hidden = false;
}

if (!api || !token || !address) {
  fail("Open this page with #api=<API origin>&token=<bearer token>&address=<wallet>.");
} else {
  start(api, token, address);
}

function start(api: string, token: string, address: string) {
  element("address").textContent = address;
  const client = createStakingClient({ baseUrl: api, token });
  /** Total points by block, from the listing as of each block. */
  const totals = new Map<number, number>();
  let charting = Promise.resolve();

  const sum = (citizens: Iterable<Citizen>) => {
    let total = 0;
    for (const citizen of citizens) total += citizen.totalPoints;
    return total;
  };

  /** Blocks at or below this one are before the API's range (before the first staker event). */
  let floor = -1;

  /** Fills in the totals of the chart's blocks up to `block` (a reorg forgets those above it). */
  async function chartTo(block: number) {
    for (const known of [...totals.keys()]) {
      if (known > block || known <= block - CHART_BLOCKS) totals.delete(known);
    }
    for (let at = block; at > Math.max(floor, block - CHART_BLOCKS); at--) {
      if (totals.has(at)) continue;
      try {
        totals.set(at, sum(await client.listAll(address, { block: at })));
      } catch (error) {
        if (!(error instanceof ApiProblem && error.parameter === "block")) throw error;
        floor = at;
      }
    }
    drawChart();
  }

  function drawChart() {
    const points = [...totals.entries()].sort(([a], [b]) => a - b);
    const svg = element<SVGSVGElement>("chart");
    svg.dataset.blocks = String(points.length);
    if (points.length === 0) return;
    const [width, height, pad] = [600, 180, 24];
    const values = points.map(([, total]) => total);
    const low = Math.min(...values);
    const high = Math.max(...values);
    const first = points[0]![0];
    const last = points.at(-1)![0];
    const x = (block: number) =>
      last === first ? width / 2 : pad + ((block - first) / (last - first)) * (width - 2 * pad);
    const y = (total: number) =>
      high === low
        ? height / 2
        : height - pad - ((total - low) / (high - low)) * (height - 2 * pad);
    const line = points.map(([block, total]) => `${x(block).toFixed(1)},${y(total).toFixed(1)}`);
    svg.innerHTML = `
      <line x1="${pad}" y1="${height - pad}" x2="${width - pad}" y2="${height - pad}" stroke="#e3e6ee"/>
      <polyline fill="none" stroke="#3a5bd9" stroke-width="2" points="${line.join(" ")}"/>
      ${points.map(([block, total]) => `<circle cx="${x(block).toFixed(1)}" cy="${y(total).toFixed(1)}" r="2.5" fill="#3a5bd9"><title>block ${block}: ${total} points</title></circle>`).join("")}
      <text x="${pad}" y="${height - 6}" font-size="11" fill="#6b7385">block ${first}</text>
      <text x="${width - pad}" y="${height - 6}" font-size="11" fill="#6b7385" text-anchor="end">block ${last}</text>
      <text x="${pad}" y="14" font-size="11" fill="#6b7385">${high} points</text>
      ${high === low ? "" : `<text x="${pad}" y="${height - pad - 4}" font-size="11" fill="#6b7385">${low}</text>`}`;
  }

  function renderCitizens(live: LiveCitizens, updated: string[]) {
    const citizens = [...live.citizens.values()].sort(
      (a, b) =>
        b.totalPoints - a.totalPoints ||
        a.type.localeCompare(b.type) ||
        Number(a.id) - Number(b.id),
    );
    element("total").textContent = sum(citizens).toLocaleString("en-US");
    element("count").textContent = String(citizens.length);
    element("block").textContent = String(live.block);
    element("empty").hidden = citizens.length > 0;
    const body = element("citizens");
    body.replaceChildren(
      ...citizens.map((citizen) => {
        const key = `${citizen.type}:${citizen.id}`;
        const row = document.createElement("tr");
        row.dataset.key = key;
        if (updated.includes(key)) row.className = "fresh";
        const cells: [string, boolean][] = [
          [`${citizen.type.toUpperCase()} #${citizen.id}`, false],
          [citizen.name, false],
          [citizen.totalPoints.toLocaleString("en-US"), true],
          [citizen.bytes.points.toLocaleString("en-US"), true],
          [
            `${citizen.timelock.timeFormatted} · ${(citizen.timelock.multiplier / 100).toFixed(2)}×`,
            true,
          ],
          [new Date(citizen.timelock.endTime * 1000).toISOString().slice(0, 10), false],
        ];
        for (const [text, number] of cells) {
          const cell = document.createElement("td");
          cell.textContent = text;
          if (number) cell.className = "number";
          row.append(cell);
        }
        return row;
      }),
    );
  }

  client.watch(address, {
    onChange(live, change) {
      show("live", `live · ${live.connections > 1 ? "resumed" : "connected"}`);
      renderCitizens(live, change.updated);
      charting = charting
        .then(() => chartTo(change.block))
        .catch((error) => fail(`chart: ${error instanceof Error ? error.message : error}`));
    },
    onError(error) {
      fail(error.message);
    },
  });
}
