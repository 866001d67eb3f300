#!/usr/bin/env node
// Peer adapter: the JavaScript GGUF reader @huggingface/gguf (npm, pinned to
// 0.4.6 by scripts/peers-node.sh), read-only, speaking the generic peer
// protocol of conform/peers/README.md ("Generic peer protocol").
//
// Usage (DIR = the install directory scripts/peers-node.sh prints; also
// taken from $GGUFRW_HF_GGUF_MODULES; else node's own module resolution):
//   node hf_gguf_peer.mjs [--modules DIR] --serve          JSON lines on stdin/stdout
//   node hf_gguf_peer.mjs [--modules DIR] --capabilities   print the capabilities
//   node hf_gguf_peer.mjs [--modules DIR] FILE.gguf        print one read; exit 0 if ok
//                                                         (FILE may be an http(s) URL)
//
// Requests: {"op":"capabilities"} and {"op":"read","path":P}. Every response
// is {"ok":true,...} or {"ok":false,"error":"<Error name>: <message>"}; a
// request's "id" is echoed; a field an op does not know is refused. Never
// dies on a bad request; blank lines are skipped; EOF ends the process.
//
// "read" calls gguf(P, {allowLocalFile: true, typedMetadata: true}) and
// prints what it returned in the JSON shape of `ggufrw dump --json`:
// BigInt values as exact JSON integers, floats as shortest round-trip
// decimals with a "." or exponent (NaN/±inf as "nan"/"inf"/"-inf", -0 as
// -0.0), spec type names. The package keeps no element type for arrays
// inside arrays: those are printed as {"element_type":null,"value":[...]}.
// It has no tensor byte sizes: tensors have no "size".

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const PINNED_VERSION = "0.4.6";
const PACKAGE = "@huggingface/gguf";

// ---------------------------------------------------------------------------
// arguments and the package

function usage() {
  process.stderr.write(
    "usage: hf_gguf_peer.mjs [--modules DIR] --serve | --capabilities | FILE.gguf\n" +
      "  DIR: the install directory printed by scripts/peers-node.sh (has node_modules/)\n",
  );
}

const args = process.argv.slice(2);
let modulesDir = process.env.GGUFRW_HF_GGUF_MODULES || null;
let mode = null;
let file = null;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--modules") {
    if (i + 1 >= args.length) { usage(); process.exit(2); }
    modulesDir = args[++i];
  } else if (a === "--serve" || a === "--capabilities") {
    if (mode) { usage(); process.exit(2); }
    mode = a;
  } else if (a === "-h" || a === "--help") {
    usage(); process.exit(0);
  } else if (a.startsWith("--") || file !== null) {
    usage(); process.exit(2);
  } else {
    file = a;
  }
}
if ((mode === null) === (file === null)) { usage(); process.exit(2); }

let pkg, pkgVersion, tasksVersion;
try {
  let entry;
  if (modulesDir) {
    const base = join(resolve(modulesDir), "node_modules", ...PACKAGE.split("/"));
    const meta = JSON.parse(readFileSync(join(base, "package.json"), "utf8"));
    pkgVersion = meta.version;
    entry = pathToFileURL(join(base, meta.exports["."].import)).href;
    try {
      tasksVersion = JSON.parse(readFileSync(join(resolve(modulesDir), "node_modules", "@huggingface", "tasks", "package.json"), "utf8")).version;
    } catch { tasksVersion = null; }
  } else {
    entry = PACKAGE;
  }
  pkg = await import(entry);
} catch (e) {
  process.stderr.write(`hf_gguf_peer: cannot load ${PACKAGE}${modulesDir ? " from " + modulesDir : ""}: ${e && e.message}\n` +
    "  (run scripts/peers-node.sh and pass the directory it prints with --modules)\n");
  process.exit(2);
}
if (pkgVersion !== undefined && pkgVersion !== PINNED_VERSION) {
  process.stderr.write(`hf_gguf_peer: ${PACKAGE} ${pkgVersion} found, this adapter is written for ${PINNED_VERSION}\n`);
  process.exit(2);
}
const { gguf, GGUFValueType, GGMLQuantizationType } = pkg;

// ---------------------------------------------------------------------------
// JSON output with exact integers (BigInt) and floats kept as floats

class Raw {
  constructor(text) { this.text = text; }
}

function floatJson(x) {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (Object.is(x, -0)) return new Raw("-0.0");
  let s = String(x); // shortest round-trip digits
  if (!/[.eE]/.test(s)) s += ".0";
  return new Raw(s);
}

function serialize(v) {
  if (v instanceof Raw) return v.text;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error(`internal: non-finite number ${v} outside floatJson`);
    return String(v);
  }
  if (v === null || typeof v === "boolean" || typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(serialize).join(",") + "]";
  return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + serialize(x)).join(",") + "}";
}

// ---------------------------------------------------------------------------
// values

const TYPE_NAMES = {
  [GGUFValueType.UINT8]: "uint8", [GGUFValueType.INT8]: "int8", [GGUFValueType.UINT16]: "uint16",
  [GGUFValueType.INT16]: "int16", [GGUFValueType.UINT32]: "uint32", [GGUFValueType.INT32]: "int32",
  [GGUFValueType.FLOAT32]: "float32", [GGUFValueType.BOOL]: "bool", [GGUFValueType.STRING]: "string",
  [GGUFValueType.ARRAY]: "array", [GGUFValueType.UINT64]: "uint64", [GGUFValueType.INT64]: "int64",
  [GGUFValueType.FLOAT64]: "float64",
};

function typeName(t) {
  const n = TYPE_NAMES[t];
  if (n === undefined) throw new Error(`internal: the package returned value type ${t}`);
  return n;
}

// a value whose type the package kept (top-level values and the elements of
// top-level arrays)
function typedValue(v, type) {
  switch (type) {
    case GGUFValueType.FLOAT32:
    case GGUFValueType.FLOAT64:
      return floatJson(v);
    case GGUFValueType.UINT64:
    case GGUFValueType.INT64:
      if (typeof v !== "bigint") throw new Error(`internal: ${typeName(type)} value ${v} is not a BigInt`);
      return v;
    case GGUFValueType.ARRAY:
      if (!Array.isArray(v)) throw new Error("internal: array value is not an array");
      return { element_type: null, value: v.map(untypedValue) };
    default:
      return v; // integers up to 32 bits (exact JS numbers), bool, string
  }
}

// an element of an array inside an array: the package returns plain JS values
// without the element type, so only the JS type is known
function untypedValue(v) {
  if (Array.isArray(v)) return { element_type: null, value: v.map(untypedValue) };
  if (typeof v === "number") return Number.isInteger(v) && !Object.is(v, -0) ? v : floatJson(v);
  return v; // bigint, boolean, string
}

// ggml's spelling of a GGMLQuantizationType member name: lower case, a
// trailing _K kept upper case (Q4_K -> q4_K)
function ggmlTypeName(id) {
  const name = GGMLQuantizationType[id];
  if (typeof name !== "string") return id; // not in the package's enum: the id itself
  const lower = name.toLowerCase();
  return lower.endsWith("_k") ? lower.slice(0, -2) + "_K" : lower;
}

// header fields the package stores in the same object as the KVs
const PSEUDO_KEYS = new Set(["version", "tensor_count", "kv_count"]);

async function readFile(path) {
  // a URL is fetched by the package (range requests); a path is made absolute, so that it is
  // never taken for one
  const target = /^https?:\/\//i.test(path) ? path : resolve(path);
  const r = await gguf(target, { allowLocalFile: true, typedMetadata: true });
  const tm = r.typedMetadata;
  const metadata = [];
  for (const [key, entry] of Object.entries(tm)) {
    if (PSEUDO_KEYS.has(key)) continue;
    const e = { key, type: typeName(entry.type) };
    if (entry.type === GGUFValueType.ARRAY) {
      const sub = entry.subType;
      e.element_type = sub === undefined ? null : typeName(sub);
      e.value = entry.value.map((x) => typedValue(x, sub));
    } else {
      e.value = typedValue(entry.value, entry.type);
    }
    metadata.push(e);
  }
  // the package computes the data offset with this alignment (and GGML_PAD)
  const rawAlignment = r.metadata["general.alignment"] ?? 32;
  const tensors = r.tensorInfos.map((t) => ({
    name: t.name,
    type: ggmlTypeName(t.dtype),
    shape: t.shape,
    offset: t.offset,
  }));
  const version = tm.version;
  return {
    version: version.type === GGUFValueType.UINT32 ? version.value : typedValue(version.value, version.type),
    byte_order: r.littleEndian ? "little" : "big",
    alignment: Number(rawAlignment),
    data_offset: r.tensorDataOffset,
    metadata,
    tensors,
  };
}

// ---------------------------------------------------------------------------
// capabilities: each value verified by running this adapter (README.md,
// "Capabilities of the @huggingface/gguf adapter") and read in the package's
// source (node_modules/@huggingface/gguf/src/gguf.ts)

function capabilities() {
  const named = [];
  for (const v of Object.values(GGMLQuantizationType)) {
    if (typeof v === "number") named.push(ggmlTypeName(v)); // (the enum also maps ids back to names)
  }
  return {
    ok: true,
    name: "@huggingface/gguf",
    version: pkgVersion ?? "unknown",
    tasks_version: tasksVersion ?? "unknown",
    ops: ["capabilities", "read"],
    value_types: Object.values(TYPE_NAMES), // the package's GGUFValueType, by the spec's names
    read: {
      versions: [1, 2, 3],                 // isVersion; v1 with 32-bit counts and lengths
      byte_orders: ["little", "big"],      // big when the version's low 16 bits are 0
      max_array_depth: 4,                  // MAX_ARRAY_RECURSION_DEPTH: "Nested ARRAY depth 4 exceeds maximum allowed (4)"
      strict_utf8: false,                  // TextDecoder: invalid sequences become U+FFFD
      strict_bools: false,                 // getUint8 !== 0
      keeps_dimension_count: true,
      alignment: "power_of_two",           // others are read, but GGML_PAD gives a wrong data_offset
      layout: "any",                       // tensor offsets and data are not checked
      magic_fugg: false,                   // the bytes must be "GGUF"
      tensor_types: named,                 // any id is read; ids not in the enum print as the number
      scalar_tensor_types: named,
      full_load: false,
      tensor_size: false,                  // no "size" in the tensors
      nested_element_types: false,         // inner arrays: {"element_type":null,...}
      strings_with_nul: true,
      leading_bom_kept: false,             // TextDecoder strips a leading U+FEFF from every string
      padded_data_offset_without_tensors: true,
      key_order: "js_object",              // integer-like keys first; duplicates: last value at the first place
      unreadable_keys: ["version", "tensor_count", "kv_count", "__proto__"],
      limits: {
        max_kv_bytes: 500000,              // longer KVs: string values may be cut silently (2 MB read chunks)
        max_header_bytes: 50000000,        // HTTP_TOTAL_MAX_SIZE
        max_string_bytes: 10000000,        // MAX_STRING_LENGTH
        max_array_len: 1000000,            // MAX_METADATA_ARRAY_LENGTH
        max_kv_count: 100000,              // MAX_KV_COUNT
        max_tensor_count: 10000000,        // MAX_TENSOR_COUNT
        max_dims: 8,                       // MAX_TENSOR_NDIMS
        max_dim: 4294967296,               // MAX_TENSOR_DIM
      },
    },
  };
}

// ---------------------------------------------------------------------------
// requests

class Refused extends Error {
  constructor(message) { super(message); this.name = "Refused"; }
}

function checkFields(req, allowed, where) {
  for (const k of Object.keys(req)) {
    if (!allowed.includes(k)) throw new Refused(`${where}: unexpected field ${JSON.stringify(k)}`);
  }
}

async function handle(req) {
  let resp;
  try {
    if (req === null || typeof req !== "object" || Array.isArray(req)) throw new Refused("request must be a JSON object");
    const op = req.op;
    if (typeof op !== "string") throw new Refused('request needs "op": capabilities or read');
    if (op === "capabilities") {
      checkFields(req, ["op", "id"], "capabilities");
      resp = capabilities();
    } else if (op === "read") {
      checkFields(req, ["op", "id", "path", "full"], "read");
      if (!("path" in req)) throw new Refused('missing field "path"');
      if (typeof req.path !== "string") throw new Refused(`field "path": expected a string, got ${JSON.stringify(req.path)}`);
      if ("full" in req && req.full !== false) {
        throw new Refused(`field "full": only false: ${PACKAGE} reads the header only (it never loads tensor data)`);
      }
      resp = { ok: true, file: await readFile(req.path) };
    } else {
      throw new Refused(`unknown op ${JSON.stringify(op)} (capabilities, read; this peer cannot write)`);
    }
  } catch (e) {
    const name = e && e.name ? e.name : "Error";
    const message = e && e.message !== undefined ? e.message : String(e);
    resp = { ok: false, error: `${name}: ${message}` };
  }
  if (req !== null && typeof req === "object" && !Array.isArray(req) && "id" in req) resp.id = req.id;
  return resp;
}

function toLine(resp) {
  try {
    return serialize(resp);
  } catch (e) {
    return JSON.stringify({ ok: false, error: `adapter: cannot encode the response: ${e && e.message}` });
  }
}

process.on("unhandledRejection", (e) => {
  process.stderr.write(`hf_gguf_peer: unhandled rejection: ${e && e.stack ? e.stack : e}\n`);
});

if (mode === "--serve") {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      process.stdout.write(toLine({ ok: false, error: `bad JSON request: ${e.message}` }) + "\n");
      continue;
    }
    process.stdout.write(toLine(await handle(req)) + "\n");
  }
} else {
  const resp = await handle(mode === "--capabilities" ? { op: "capabilities" } : { op: "read", path: file });
  process.stdout.write(toLine(resp) + "\n");
  process.exitCode = resp.ok ? 0 : 1;
}
