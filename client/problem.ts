/**
 * The API's errors on the client side: every problem+json answer (RFC 9457) becomes one named
 * error carrying the document's fields, so a dashboard tells a revoked token from a bad address
 * by `status` and `type`, never by parsing text.
 */

/** The fields of a problem document the API sends (api/problems.ts). */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  parameter?: string;
}

export class ApiProblem extends Error {
  override name = "ApiProblem";
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  /** The parameter a 400 is about (`address`, `block`, …). */
  readonly parameter: string | undefined;

  constructor(document: ProblemDocument) {
    super(`${document.status} ${document.title}: ${document.detail}`);
    this.status = document.status;
    this.type = document.type;
    this.title = document.title;
    this.detail = document.detail;
    this.parameter = document.parameter;
  }
}

function isProblemDocument(value: unknown): value is ProblemDocument {
  if (typeof value !== "object" || value === null) return false;
  const { type, title, status, detail } = value as Record<string, unknown>;
  return (
    typeof type === "string" &&
    typeof title === "string" &&
    typeof status === "number" &&
    typeof detail === "string"
  );
}

/**
 * The error for a failed answer's body (parsed JSON or text): its problem document, or, from
 * something in between that answered without one (a proxy's 502), a problem naming the status.
 */
export function problemOf(status: number, body: unknown): ApiProblem {
  if (isProblemDocument(body)) return new ApiProblem(body);
  const text = typeof body === "string" ? body.trim().slice(0, 200) : "";
  return new ApiProblem({
    type: "about:blank",
    title: `HTTP ${status}`,
    status,
    detail: text === "" ? "the answer held no problem document" : text,
  });
}

/** The error a failed Response stands for (reads its body). */
export async function problemFromResponse(response: Response): Promise<ApiProblem> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: problemOf names the status and keeps the text.
  }
  return problemOf(response.status, body);
}
