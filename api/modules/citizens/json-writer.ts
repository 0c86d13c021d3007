/**
 * A JSON-text writer compiled from a record's `t` schema: the schema gives the members, their
 * order and how each value is written; `sources` give each member's value. Compiled once into
 * one function of string concatenation (as fast-json-stringify does), since the record writer is
 * on the API's hot path: a generic walk of the schema per record costs several times more.
 * A member of the schema without a source, or a source for no member, is refused when the
 * writer is built (and by the types), so the schema stays the one definition of the record.
 */
import {
  Kind,
  OptionalKind,
  type Static,
  type TLiteral,
  type TObject,
  type TOptional,
  type TSchema,
} from "@sinclair/typebox";

/** A source's value: an integer schema also takes the decimal digits a raw row carries. */
type Value<S extends TSchema> = Static<S> extends bigint ? bigint | string : Static<S>;

/**
 * Where each member gets its value, nested as the schema's objects are; literals come from the
 * schema itself. An optional member's source returns undefined to leave it out.
 */
export type Sources<S, In, Ctx> =
  S extends TObject<infer P>
    ? { [K in keyof P as P[K] extends TLiteral ? never : K]: Sources<P[K], In, Ctx> }
    : S extends TSchema
      ? (input: In, context: Ctx) => Value<S> | (S extends TOptional<TSchema> ? undefined : never)
      : never;

/** A schema member and its sources do not match (or the schema uses a shape not written here). */
export class RecordSourcesMismatch extends Error {
  override name = "RecordSourcesMismatch";
}

type Source = (input: unknown, context: unknown) => unknown;

/** Digits only: written between quotes with nothing to escape. */
const DIGITS = "^[0-9]+$";

/** The expression that writes `value` as the schema's JSON. */
function encoder(schema: TSchema, value: string): string {
  switch (schema[Kind]) {
    case "Number":
    case "Integer":
    case "Boolean":
      // What JSON.stringify writes for a finite number or a boolean; a bigint's exact digits.
      return `("" + ${value})`;
    case "String":
      return schema.pattern === DIGITS ? `('"' + ${value} + '"')` : `JSON.stringify(${value})`;
    case "Array":
      return `JSON.stringify(${value})`;
    default:
      throw new RecordSourcesMismatch(`no JSON writer for a ${String(schema[Kind])} member`);
  }
}

/** Compiles `schema` with `sources` into a function writing the record as JSON text. */
export function jsonWriter<S extends TObject, In, Ctx>(
  schema: S,
  sources: Sources<S, In, Ctx>,
): (input: In, context: Ctx) => string {
  const functions: Source[] = [];
  // One concatenation from one optional member to the next: the writer is a few statements.
  const lines: string[] = ["let out = '';", "let value;"];
  let pending: string[] = [];
  let text = "";
  const emit = (more: string) => {
    text += more;
  };
  const push = (expression: string) => {
    if (text !== "") pending.push(JSON.stringify(text));
    text = "";
    pending.push(expression);
  };
  const flush = () => {
    if (text !== "") pending.push(JSON.stringify(text));
    text = "";
    if (pending.length > 0) lines.push(`out += ${pending.join(" + ")};`);
    pending = [];
  };

  const object = (node: TObject, given: Record<string, unknown>, path: string) => {
    const names = Object.keys(node.properties);
    const extra = Object.keys(given).filter((name) => !names.includes(name));
    if (extra.length > 0) {
      throw new RecordSourcesMismatch(
        `sources for no member of the schema: ${extra.map((n) => path + n)}`,
      );
    }
    emit("{");
    names.forEach((name, index) => {
      const member = node.properties[name]!;
      const key = `${index === 0 ? "" : ","}${JSON.stringify(name)}:`;
      if (member[Kind] === "Literal") {
        emit(key + JSON.stringify((member as TLiteral).const));
        return;
      }
      const source = given[name];
      if (source === undefined) throw new RecordSourcesMismatch(`no source for ${path}${name}`);
      if (member[Kind] === "Object") {
        emit(key);
        object(member as TObject, source as Record<string, unknown>, `${path}${name}.`);
        return;
      }
      if (typeof source !== "function") {
        throw new RecordSourcesMismatch(`the source of ${path}${name} is not a function`);
      }
      const call = `f${functions.push(source as Source) - 1}(input, context)`;
      if (member[OptionalKind] === "Optional") {
        if (index === 0) throw new RecordSourcesMismatch(`${path}${name}: optional first member`);
        flush();
        lines.push(
          `value = ${call};`,
          `if (value !== undefined) out += ${JSON.stringify(key)} + ${encoder(member, "value")};`,
        );
      } else {
        emit(key);
        push(encoder(member, call));
      }
    });
    emit("}");
  };
  object(schema, sources as Record<string, unknown>, "");
  flush();

  const parameters = functions.map((_, index) => `f${index}`);
  const body = `return function write(input, context) {\n${lines.join("\n")}\nreturn out;\n};`;
  return new Function(...parameters, body)(...functions);
}
