// A typed filter tree as a WHERE condition over `data` (the record as jsonb), every value and name a
// parameter, selecting what query/predicate.ts selects; where SQL cannot say that exactly, a
// superset that says so, for the store to finish with compileFilter. Sorts are sql-sort.ts's.

import type { CompareNode, ElemMatchNode, FilterNode, SearchNode } from "../../query/filter-tree.ts";
import { parseDateValue } from "../../schema/fields.ts";
import {
  containsPatternOf,
  foldedText,
  isStorable,
  isStorableJson,
  jsonbParam,
  millisecondsOf,
  NUMERIC_LAST,
  numericParam,
  searchText,
  sortKeyExpression,
  sortPrefixOf,
  TEXT_LAST,
  TEXT_PRESENT_PREFIX,
  textParam,
  type SqlParams,
} from "./sql-values.ts";
import { columnOf, columnPrefixOf, isWholeInColumn, NO_COLUMNS, SEARCH_COLUMN, storedTextKey, type TypedColumn, type TypedColumns } from "./typed-columns.ts";

export interface WhereClause {
  readonly sql: string;
  /** True: the rows are exactly compileFilter's. False: a superset, to be filtered by compileFilter. */
  readonly exact: boolean;
  /**
   * No member of `data` is reached by a parameter naming it: every condition is on a typed column
   * (or `data @>` a value), whose index a plan made once, for any values (a prepared statement's
   * generic plan), still uses. A path into `data` is named by a parameter, which only a plan made
   * for its values matches to an index.
   */
  readonly isPreparable: boolean;
}

/** `columns`: the table's typed columns (typed-columns.ts), used where they mean what `data` does. */
export function whereOf(filter: FilterNode | null, params: SqlParams, columns: TypedColumns = NO_COLUMNS): WhereClause {
  if (!filter) return { sql: "TRUE", exact: true, isPreparable: true };
  const translation = new Translation(params, columns);
  const sql = translation.node(filter, RECORD, true);
  return { sql, exact: translation.isExact, isPreparable: !sql.includes("data ->") };
}

/**
 * Where paths start: at `data` (a record), or at one element of an array inside $elemMatch. Both
 * take their first step as a plain member: data is an object, and an element that is an array
 * has no members (predicate.ts, compileElementReach).
 */
interface Scope {
  readonly base: string;
}

const RECORD: Scope = { base: "data" };
const ARRAY_INDEX_RE = /^(?:0|[1-9]\d*)$/;
const MAX_INT4 = 2 ** 31 - 1;

/** A test of one reached jsonb value (SQL of it), as SQL that is true, or false or NULL. */
type Test = (value: string) => string;

/** The test no value passes (an operand no stored value can equal): reach() then adds no parameter. */
const NEVER: Test = () => "FALSE";

/**
 * One translation. SQL's NULL counts as false throughout: AND and OR keep that reading, and
 * negation is written `IS NOT TRUE`, which gives true for NULL.
 *
 * `isPositive` is the node's polarity: true where the whole condition needs a superset of the
 * node's rows, false under an odd number of negations, where it needs a subset. A node SQL cannot
 * say exactly gives the superset or the subset its polarity needs, and clears isExact.
 */
class Translation {
  isExact = true;
  private aliases = 0;

  constructor(
    private readonly params: SqlParams,
    private readonly columns: TypedColumns,
  ) {}

  node(node: FilterNode, scope: Scope, isPositive: boolean): string {
    switch (node.type) {
      case "and":
        return node.nodes.length === 0 ? "TRUE" : `(${node.nodes.map((child) => this.node(child, scope, isPositive)).join(" AND ")})`;
      case "or":
        return node.nodes.length === 0 ? "FALSE" : `(${node.nodes.map((child) => this.node(child, scope, isPositive)).join(" OR ")})`;
      case "not":
        return not(this.node(node.node, scope, !isPositive));
      case "elemMatch":
        return this.elemMatch(node, scope, isPositive);
      case "search":
        return this.search(node, isPositive);
      case "compare":
        return this.compare(node, scope, isPositive);
    }
  }

  /**
   * Gives up on exactness: the bound the polarity needs, from `superset` (true where the node is).
   * Parameters are added only for SQL that is sent: PostgreSQL refuses a statement with a
   * parameter it cannot type, which one it never mentions is.
   */
  private approximate(isPositive: boolean, superset: string): string {
    this.isExact = false;
    return isPositive ? superset : "FALSE";
  }

  private alias(prefix: string): string {
    return `${prefix}${++this.aliases}`;
  }

  // ---------------------------------------------------------------- paths

  /**
   * Whether some value the path reaches passes `test` (predicate.ts, compileReach). One step from
   * the base is one value; a longer path can fan out over arrays, so it becomes a set of rows,
   * step by step: an array there is stepped into element by element (a numeric step picks that
   * element instead), anything else by its member. Missing values are SQL NULL and JSON nulls
   * jsonb 'null': every test is false on both.
   */
  private reach(path: readonly string[], scope: Scope, test: Test): string {
    if (test === NEVER) return "FALSE";
    if (path.length === 0) return test(scope.base);
    const first = `(${scope.base} -> ${textParam(this.params, path[0]!)})`;
    if (path.length === 1) return test(first);
    let previous = this.alias("r");
    let from = `(SELECT ${first}) AS ${previous}(v)`;
    for (const step of path.slice(1)) {
      const current = this.alias("r");
      from += ` CROSS JOIN LATERAL (${this.step(`${previous}.v`, step)}) AS ${current}(v)`;
      previous = current;
    }
    return `EXISTS (SELECT 1 FROM ${from} WHERE ${test(`${previous}.v`)})`;
  }

  private step(value: string, step: string): string {
    const member = textParam(this.params, step);
    if (ARRAY_INDEX_RE.test(step)) {
      const element = Number(step) <= MAX_INT4 ? `${value} -> ${this.params.add(step)}::text::int` : "NULL::jsonb";
      return `SELECT CASE WHEN jsonb_typeof(${value}) = 'array' THEN ${element} ELSE ${value} -> ${member} END`;
    }
    const element = this.alias("s");
    return `SELECT ${element}.v -> ${member} FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${value}) = 'array' THEN ${value} ELSE jsonb_build_array(${value}) END) AS ${element}(v)`;
  }

  /** Whether `value` is an array with an element that `test` passes. */
  private hasElement(value: string, test: Test): string {
    const element = this.alias("e");
    return `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${value}) = 'array' THEN ${value} END) AS ${element}(v) WHERE ${test(`${element}.v`)})`;
  }

  private elemMatch(node: ElemMatchNode, scope: Scope, isPositive: boolean): string {
    const element = this.alias("e");
    // The element's test is built once: its parameters are shared by wherever the path leads.
    const inner = this.node(node.node, { base: `${element}.v` }, isPositive);
    return this.reach(node.path, scope, (value) => `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${value}) = 'array' THEN ${value} END) AS ${element}(v) WHERE ${inner})`);
  }

  // ---------------------------------------------------------------- search

  /**
   * The text fields joined into one text, each after a U+0001, so that one trigram index on it
   * (sql-sort.ts, indexesOf) can serve every search. The memory store joins with U+0000, which a
   * search text may hold to match across two fields: there it is looked for as `%`. A search text
   * holding U+0000, U+0001 or U+0002 may then match a join, or half of an escape (stored-text.ts):
   * it finds a superset. Any other text finds only whole characters, never a join.
   */
  private search(node: SearchNode, isPositive: boolean): string {
    if (node.text === "") return "TRUE"; // "".includes("") holds for every record
    if (node.fields.length === 0) return "FALSE";
    const parts = node.text.split("\u0000").map(containsPatternOf);
    if (!parts.every((part) => part.isExact) || /[\u0000-\u0002]/.test(node.text)) {
      this.isExact = false;
      if (!isPositive) return "FALSE";
    }
    const pattern = parts.map((part) => part.pattern).join("");
    // The search column holds this text when it joins the same fields (a caller may be kept from some: docs/rules.md).
    const column = this.columns.get(SEARCH_COLUMN);
    const isColumn = column?.searchFields !== undefined && column.searchFields.join("\u0000") === node.fields.join("\u0000");
    const text = isColumn ? column.sql : searchText(node.fields.map((field) => textParam(this.params, field)));
    return `(${text} LIKE ${textParam(this.params, pattern)})`;
  }

  // ---------------------------------------------------------------- compare

  /** predicate.ts, compileCompare: presence, null in $in/$nin, $size, $all, negations. */
  private compare(node: CompareNode, scope: Scope, isPositive: boolean): string {
    const { op, value } = node;
    const reach = (test: Test) => this.reach(node.path, scope, test);
    if (op === "$exists" || (value === null && (op === "$eq" || op === "$ne"))) {
      const isWanted = op === "$exists" ? value === true : op === "$ne";
      const present = reach(isPresent);
      return isWanted ? present : not(present);
    }
    if ((op === "$in" || op === "$nin") && (value as unknown[]).includes(null)) {
      const listed = this.compare({ ...node, op: "$in", value: (value as unknown[]).filter((item) => item !== null) }, scope, op === "$in" ? isPositive : !isPositive);
      const matches = `(${not(reach(isPresent))} OR ${listed})`;
      return op === "$in" ? matches : not(matches);
    }
    if (op === "$size") {
      const size = numericParam(this.params, value as number);
      return reach((v) => `(CASE WHEN jsonb_typeof(${v}) = 'array' THEN jsonb_array_length(${v}) = ${size} END)`);
    }
    if (op === "$all") {
      const items = value as unknown[];
      return `(${items.map((item) => this.positive({ ...node, op: "$eq", value: item }, scope, isPositive)).join(" AND ")})`;
    }
    if (op === "$ne" || op === "$nin") return not(this.positive({ ...node, op: op === "$ne" ? "$eq" : "$in" }, scope, !isPositive));
    return this.positive(node, scope, isPositive);
  }

  /** A positive operator ($eq, $in, a range, $contains, $regex) on what the path reaches. */
  private positive(node: CompareNode, scope: Scope, isPositive: boolean): string {
    if (!isPositive && isApproximate(node)) return this.approximate(false, "FALSE");
    if (scope === RECORD && node.path.length === 1) {
      const direct = node.isArray ? this.arrayField(node) : this.scalarField(node);
      if (direct !== null) return direct;
    }
    return this.reach(node.path, scope, this.valueTest(node, isPositive));
  }

  /**
   * $eq and $in on a field declared string, number or boolean, and ranges and dates, on the field's
   * typed column (columnCompare) where its operands are of the field's type. Else $eq and $in as
   * `data @>` (a GIN jsonb_path_ops index serves it; containment compares as jsonb =, which is the
   * memory store's === for one type), ranges and dates on the field's sort key over `data`. Null
   * when the operator is another.
   */
  private scalarField(node: CompareNode): string | null {
    const { kind, op, value } = node;
    const field = node.path[0]!;
    if (kind === "json") return null;
    const column = columnOf(this.columns, field, kind);
    const typed = column ? this.columnCompare(node, column) : null;
    if (typed !== null) return typed;
    if ((op === "$eq" || op === "$in") && kind !== "date") {
      const items = (op === "$eq" ? [value] : (value as unknown[])).filter(isStorableJson);
      return anyOf(items.map((item) => `data @> ${jsonbParam(this.params, { [field]: item })}`));
    }
    if (op === "$eq" || op === "$in") {
      const items = op === "$eq" ? [value] : (value as unknown[]);
      if (items.length === 0) return "FALSE";
      const sortKey = sortKeyExpression(kind, textParam(this.params, field));
      return `${sortKey} IN (${items.map((item) => numericParam(this.params, parseDateValue(item))).join(", ")})`;
    }
    const range = RANGES[op];
    if (!range || (typeof value === "string" && kind !== "date" && !isStorable(value))) return null;
    const sortKey = sortKeyExpression(kind, textParam(this.params, field));
    const bound = kind === "string" ? textParam(this.params, TEXT_PRESENT_PREFIX + value) : numericParam(this.params, comparableBound(node));
    // Missing values sort last: the upper side of a range must leave them out.
    const last = kind === "string" ? TEXT_LAST : NUMERIC_LAST;
    const isLower = range === ">" || range === ">=";
    const condition = isLower ? `(${sortKey} ${range} ${bound} AND ${sortKey} < ${last})` : `${sortKey} ${range} ${bound}`;
    if (kind !== "string") return condition;
    // A text key's index holds its prefix (sql-values.ts), as its typed column does: the same bound on it, implied, is the index's range.
    const prefix = column ? `${column.sql} ${isLower ? ">=" : "<="} ${this.params.add(columnPrefixOf(storedTextKey(TEXT_PRESENT_PREFIX + value)))}::text` : null;
    return `(${prefix ?? `${sortPrefixOf(sortKey)} ${isLower ? ">=" : "<="} ${sortPrefixOf(bound)}`} AND ${condition})`;
  }

  /**
   * $eq, $in and ranges on a field's typed column, which holds its sort key (typed-columns.ts): a
   * value of the field's type has the key its value gives, and any other (missing, null, of another
   * type) the key that sorts last, which no operand of the field's type has. A text column holds
   * the key's first characters: an operand whose key is longer is compared with the column's part
   * of it, then with the whole value. Null where the operands are not of the field's type, and for
   * a range over a long text (scalarField's prefix range then).
   */
  private columnCompare(node: CompareNode, column: TypedColumn): string | null {
    const { kind, op, value } = node;
    const params = this.params;
    if (op === "$eq" || op === "$in") {
      const items = op === "$eq" ? [value] : (value as unknown[]);
      if (kind === "date") return items.length === 0 ? "FALSE" : `${column.sql} IN (${items.map((item) => numericParam(params, parseDateValue(item))).join(", ")})`;
      if (!items.every((item) => typeof item === kind)) return null;
      const keys: string[] = [];
      const longer: string[] = [];
      for (const item of items) {
        if (kind === "number") keys.push(numericParam(params, item as number));
        else if (kind === "boolean") keys.push(item ? "1" : "0");
        else if (isStorable(item as string)) {
          const stored = storedTextKey(TEXT_PRESENT_PREFIX + (item as string));
          if (isWholeInColumn(stored)) keys.push(`${params.add(stored)}::text`);
          else longer.push(`(${column.sql} = ${params.add(columnPrefixOf(stored))}::text AND data @> ${jsonbParam(params, { [column.field]: item })})`);
        }
      }
      return anyOf([...(keys.length > 0 ? [`${column.sql} IN (${keys.join(", ")})`] : []), ...longer]);
    }
    const range = RANGES[op];
    if (!range) return null;
    let bound: string;
    if (kind === "string") {
      if (typeof value !== "string" || !isStorable(value)) return null;
      const stored = storedTextKey(TEXT_PRESENT_PREFIX + value);
      if (!isWholeInColumn(stored)) return null;
      bound = `${params.add(stored)}::text`;
    } else if (kind === "date" || typeof value === (kind === "number" ? "number" : "boolean")) {
      bound = numericParam(params, comparableBound(node));
    } else return null;
    // Missing values sort last: the upper side of a range leaves them out, the lower says so.
    const isLower = range === ">" || range === ">=";
    return isLower ? `(${column.sql} ${range} ${bound} AND ${column.sql} < ${kind === "string" ? TEXT_LAST : NUMERIC_LAST})` : `${column.sql} ${range} ${bound}`;
  }

  /**
   * $eq, $in and $all with scalar operands on an array field of strings, numbers or booleans:
   * "an element equals it" is `data @> {"f": [x]}` (containment does not reach into arrays
   * nested in the array), and a non-array value left by an older declaration is compared whole.
   */
  private arrayField(node: CompareNode): string | null {
    const { kind, op, value } = node;
    if (kind === "json" || kind === "date" || (op !== "$eq" && op !== "$in")) return null;
    const items = op === "$eq" ? [value] : (value as unknown[]);
    if (items.some((item) => typeof item === "object")) return null;
    const field = node.path[0]!;
    return anyOf(
      items.filter(isStorableJson).map((item) => `(data @> ${jsonbParam(this.params, { [field]: [item] })} OR data @> ${jsonbParam(this.params, { [field]: item })})`),
    );
  }

  /** predicate.ts, compileValueTest: an array reached (of an array field, or in JSON) matches when an element does. */
  private valueTest(node: CompareNode, isPositive: boolean): Test {
    const test = this.scalarTest(node, isPositive);
    if (test === NEVER || (!node.isArray && node.kind !== "json")) return test;
    return (value) => `(${test(value)} OR ${this.hasElement(value, test)})`;
  }

  /** predicate.ts, compileScalarTest, on one jsonb value. */
  private scalarTest(node: CompareNode, isPositive: boolean): Test {
    const { kind, op, value } = node;
    const params = this.params;
    switch (op) {
      case "$eq":
      case "$in": {
        // An operand no stored value can equal (jsonb holds no lone surrogate) is dropped.
        const items = (op === "$eq" ? [value] : (value as unknown[])).filter(isStorableJson);
        if (items.length === 0) return NEVER;
        if (kind === "date") {
          const list = items.map((item) => numericParam(params, parseDateValue(item))).join(", ");
          return (v) => `${millisecondsOf(`(${v} #>> '{}')`)} IN (${list})`;
        }
        // jsonb = is the memory store's === between scalars of the field's kind, and structural equality between objects and arrays.
        const list = items.map((item) => jsonbParam(params, item)).join(", ");
        return (v) => `${v} IN (${list})`;
      }
      case "$contains": {
        const needle = value as string;
        const { pattern, isExact } = containsPatternOf(needle);
        const like = textParam(params, pattern);
        const test = (v: string) => `(jsonb_typeof(${v}) = 'string' AND ${foldedText(`(${v} #>> '{}')`)} LIKE ${like})`;
        return isExact && !mayStartMidEscape(needle) ? test : (v) => this.approximate(isPositive, test(v));
      }
      case "$regex":
        // JavaScript's syntax is not PostgreSQL's: the memory store runs it on every string reached.
        return (v) => this.approximate(isPositive, `(jsonb_typeof(${v}) = 'string')`);
      default:
        return this.rangeTest(node, isPositive);
    }
  }

  /** $gt, $gte, $lt, $lte: a value of the operand's type (dates as instants, strings by code point) on the operator's side. */
  private rangeTest(node: CompareNode, isPositive: boolean): Test {
    const { kind, value } = node;
    const range = RANGES[node.op]!;
    if (kind === "date") {
      const bound = numericParam(this.params, parseDateValue(value));
      return (v) => `${millisecondsOf(`(${v} #>> '{}')`)} ${range} ${bound}`;
    }
    if (kind === "boolean") {
      const bound = jsonbParam(this.params, value);
      return (v) => `(jsonb_typeof(${v}) = 'boolean' AND ${v} ${range} ${bound})`;
    }
    if (typeof value === "number") {
      const bound = numericParam(this.params, value);
      return (v) => `(CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v})::numeric END) ${range} ${bound}`;
    }
    const isText = (v: string) => `(jsonb_typeof(${v}) = 'string')`;
    if (!isStorable(value as string)) return (v) => this.approximate(isPositive, isText(v));
    const bound = textParam(this.params, value as string);
    return (v) => `(${isText(v)} AND (${v} #>> '{}') COLLATE "C" ${range} ${bound})`;
  }
}

/** Whether SQL gives only a superset of a node's rows (positive() asks before it adds a parameter). */
function isApproximate(node: CompareNode): boolean {
  const { op, value } = node;
  if (op === "$regex") return true;
  if (op === "$contains") return !containsPatternOf(value as string).isExact || mayStartMidEscape(value as string);
  return RANGES[op] !== undefined && typeof value === "string" && node.kind !== "date" && !isStorable(value);
}

/**
 * Whether a needle's stored form could be found starting inside an escape (stored-text.ts): the
 * second unit of one is U+0001 or U+0002, and a needle starting with U+0000, U+0001 or U+0002 is
 * stored starting with one of them. Any other needle is found only where a character starts.
 */
function mayStartMidEscape(needle: string): boolean {
  return /^[\u0000-\u0002]/.test(needle);
}

const RANGES: Partial<Record<string, string>> = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" };

/** The operand of a range on a number, boolean or date field as its sort key. */
function comparableBound(node: CompareNode): number {
  if (node.kind === "date") return parseDateValue(node.value);
  if (node.kind === "boolean") return node.value ? 1 : 0;
  return node.value as number;
}

function isPresent(value: string): string {
  return `(jsonb_typeof(${value}) <> 'null')`;
}

function not(sql: string): string {
  return `((${sql}) IS NOT TRUE)`;
}

function anyOf(conditions: string[]): string {
  return conditions.length === 0 ? "FALSE" : `(${conditions.join(" OR ")})`;
}

export function isCondition(condition: string | null | undefined): condition is string {
  return typeof condition === "string" && condition !== "" && condition !== "TRUE";
}

export function whereClause(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.map((c) => `(${c})`).join(" AND ")}`;
}
