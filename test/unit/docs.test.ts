import { describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { dirname, relative, resolve, sep } from "node:path";
import { Glob } from "bun";

/**
 * The repository's own documents: every relative link lands on a file (and heading) inside the
 * repository, the README's configuration table lists exactly the variables lib/config.ts reads,
 * and no page keeps a dated run diary (a figure goes with its command and machine, not a time).
 */
const ROOT = resolve(import.meta.dir, "../..");
const PAGES = [
  "README.md",
  "api/README.md",
  ...[...new Glob("docs/**/*.md").scanSync({ cwd: ROOT })].sort(),
];

const read = (path: string) => Bun.file(resolve(ROOT, path)).text();

/** The page without its fenced code blocks and inline code, which hold no links or headings. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of markdown
    .replace(/^```[\s\S]*?^```/gm, "")
    .matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("links in README.md, api/README.md and docs/", () => {
  test("the pages exist", () => {
    expect(PAGES).toContain("docs/operators.md");
    expect(PAGES.length).toBeGreaterThan(5);
  });

  for (const page of PAGES) {
    test(`${page}: every relative link points at a file and heading in the repository`, async () => {
      const broken: string[] = [];
      for (const target of links(await read(page))) {
        const [path, anchor] = target.split("#", 2) as [string, string | undefined];
        const file = path === "" ? resolve(ROOT, page) : resolve(ROOT, dirname(page), path);
        const inside = relative(ROOT, file);
        if (inside.startsWith(`..${sep}`) || inside === "..") {
          broken.push(`${target}: outside the repository`);
          continue;
        }
        if (!existsSync(file)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (anchor !== undefined) {
          if (statSync(file).isDirectory() || !file.endsWith(".md")) {
            broken.push(`${target}: an anchor on a page that is not markdown`);
          } else if (!anchors(await Bun.file(file).text()).has(anchor)) {
            broken.push(`${target}: no such heading`);
          }
        }
      }
      expect(broken).toEqual([]);
    });
  }
});

describe("the README's configuration table", () => {
  test("lists every variable lib/config.ts reads, and none it does not", async () => {
    const source = await read("lib/config.ts");
    const variables = new Set(
      [
        ...source.matchAll(
          /\b(?:text|optionalText|integer|optionalInteger|optionalBlock|optionalAddress|oneOf(?:<[^>]*>)?|url|list|origins)\(\s*"([A-Z][A-Z0-9_]*)"/g,
        ),
      ].map((match) => match[1]!),
    );
    const readme = await read("README.md");
    const section = readme.slice(
      readme.indexOf("## Configuration"),
      readme.indexOf("\n## ", readme.indexOf("## Configuration") + 1),
    );
    const listed = new Set(
      [...section.matchAll(/^\|([^|]*)\|/gm)].flatMap((row) =>
        [...row[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!),
      ),
    );
    expect(variables.size).toBeGreaterThan(30);
    expect([...listed].sort()).toEqual([...variables].sort());
  });
});

describe("no dated run diary", () => {
  const DIARY: [string, RegExp][] = [
    ["a date", /\b20\d\d-[01]\d-[0-3]\d\b/],
    ["a time of day", /\b[0-2]?\d:[0-5]\d(?:[–-][0-2]?\d:[0-5]\d)? ?UTC\b/],
    ["a session", /\b(?:this|previous|last) session\b|\bsession's\b/i],
    ["a run named by its time", /\b(?:quiet )?runs? of (?:[0-2]?\d:[0-5]\d|20\d\d)/i],
    ["a file outside the repository", /\.\.\/shared\//],
  ];
  for (const page of PAGES) {
    test(page, async () => {
      const text = await read(page);
      const found = DIARY.flatMap(([what, pattern]) => {
        const match = text.match(pattern);
        return match ? [`${what}: ${match[0]}`] : [];
      });
      expect(found).toEqual([]);
    });
  }
});
