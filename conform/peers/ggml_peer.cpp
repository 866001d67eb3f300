// Peer adapter: ggml's own GGUF code (gguf.cpp, ggml.c, ggml-quants.c from the
// llama.cpp tree vendored in the PyPI sdist llama-cpp-python==0.3.36), driven
// through JSON lines. Built and linked against the static ggml-base library by
// scripts/ggml.sh, which prints this program's path.
//
// Usage:
//   ggml_peer --serve [--no-fork]   one JSON request per stdin line, exactly one
//                                   JSON response line per request on stdout
//   ggml_peer [--full] FILE.gguf    one "read" request; exit 0 if ok, else 1
//   ggml_peer --types               the "types" request
//   ggml_peer --capabilities        the "capabilities" request
//
// Requests (see conform/peers/README.md, "ggml peer", for the exact protocol):
//   {"op":"capabilities"}
//   {"op":"read","path":P,"full":false|true,"ctx":true|false}
//   {"op":"write","desc":D,"out":P,"force":false|true}
//   {"op":"types"}
//   {"op":"dequantize","type":T,"input":P,"output":P,"n":N}
//   {"op":"quantize","type":T,"input":P,"output":P,"nrows":R,"n_per_row":K,"ref":false|true,
//    "imatrix":P}   (optional: K f32 importance weights, passed to ggml_quantize_chunk)
//   {"op":"bench","what":"dequantize"|"quantize","type":T,"input":P,"n":N,"reps":K,
//    "threads":H,...}   (H threads, default 1, each given an even share of the blocks or
//    rows, as llama-quantize shares rows out)
// Every response is {"ok":true,...} or {"ok":false,"error":"..."}; a request
// field "id" is echoed back. Binary payloads go through files.
//
// Robustness: each request is validated before ggml is called (ggml
// GGML_ASSERTs / GGML_ABORTs on many invalid arguments), and, unless
// --no-fork is given, executed in a forked child: if ggml still aborts or
// crashes, the answer is {"ok":false,"aborted":true,"error":"<ggml's log and
// abort message>"} and the server goes on. ggml's log output is captured with
// ggml_log_set(); its abort message with ggml_set_abort_callback(). Anything
// ggml prints on stdout itself (ggml-quants.c has a few printf) is redirected
// to stderr so that stdout carries only responses.

#include "ggml.h"
#include "gguf.h"
#include "ggml-quants.h"  // internal: dequantize_row_q8_K, quantize_row_q8_K_ref

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ggml_peer assumes a little-endian host (GGUF files and the f32 payloads are little-endian)"
#endif

using json = nlohmann::ordered_json;

namespace {

// ---------------------------------------------------------------------------
// logging / abort capture

std::string g_log;     // ggml log text of the current request
int g_log_fd = -1;     // in a forked child: log text is also written here

void write_all(int fd, const char * p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t) w;
    }
}

void log_cb(enum ggml_log_level level, const char * text, void * /*user*/) {
    (void) level;
    if (text == nullptr) return;
    g_log += text;
    if (g_log_fd >= 0) write_all(g_log_fd, text, strlen(text));
}

void abort_cb(const char * message) {
    // ggml calls abort() right after this returns
    static const char prefix[] = "GGML_ABORT: ";
    if (g_log_fd >= 0) {
        write_all(g_log_fd, prefix, sizeof(prefix) - 1);
        write_all(g_log_fd, message, strlen(message));
        write_all(g_log_fd, "\n", 1);
    } else {
        fprintf(stderr, "%s%s\n", prefix, message);
    }
}

std::string trim_log(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

// ---------------------------------------------------------------------------
// errors

struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void refuse(const std::string & msg) { throw Refused(msg); }

json error_response(const std::string & msg) {
    json r;
    r["ok"] = false;
    r["error"] = msg;
    return r;
}

// ---------------------------------------------------------------------------
// UTF-8: ggml does not check it. A string that is not UTF-8 is reported as
// {"hex": "..."} of its bytes, as ggufrw's dump JSON writes it, so that the
// bytes ggml read are compared exactly. utf8_sanitize decides validity (it
// also makes the text with U+FFFD for each maximal bad subpart, which only
// its validity is used of here).

bool utf8_sanitize(const std::string & in, std::string & out) {
    const auto * s = reinterpret_cast<const unsigned char *>(in.data());
    const size_t n = in.size();
    bool valid = true;
    out.clear();
    out.reserve(n);
    size_t i = 0;
    static const char repl[] = "\xEF\xBF\xBD";
    while (i < n) {
        unsigned char b = s[i];
        if (b < 0x80) { out.push_back((char) b); ++i; continue; }
        size_t width;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) width = 2;
        else if (b >= 0xE0 && b <= 0xEF) {
            width = 3;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            width = 4;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F;
        } else {
            out += repl; valid = false; ++i; continue;
        }
        size_t k = 1;
        bool ok = true;
        for (; k < width; ++k) {
            if (i + k >= n) { ok = false; break; }
            unsigned char c = s[i + k];
            unsigned char l = (k == 1) ? lo : 0x80, h = (k == 1) ? hi : 0xBF;
            if (c < l || c > h) { ok = false; break; }
        }
        if (ok) {
            out.append(in, i, width);
            i += width;
        } else {
            out += repl; valid = false; i += k;  // the maximal valid prefix is one error
        }
    }
    return valid;
}

// sets j to the string, or to {"hex": bytes} if it is not valid UTF-8
void put_string(json & j, const std::string & s) {
    std::string clean;
    if (utf8_sanitize(s, clean)) {
        j = s;
        return;
    }
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * s.size());
    for (unsigned char c : s) {
        hex.push_back(digits[c >> 4]);
        hex.push_back(digits[c & 15]);
    }
    j = json::object();
    j["hex"] = hex;
}

// ---------------------------------------------------------------------------
// JSON value helpers

const char * const VALUE_TYPE_NAMES[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};

int value_type_from_name(const std::string & s) {
    for (int i = 0; i < GGUF_TYPE_COUNT; ++i) {
        if (s == VALUE_TYPE_NAMES[i]) return i;
    }
    return -1;
}

json json_float(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return x;
}

// ---------------------------------------------------------------------------
// ggml types

// the types ggml_quantize_chunk() has a case for (ggml.c); for any other type
// it falls through to assert(false) (compiled out in Release) and then fails
// GGML_ASSERT(result == nrows * row_size)
bool quantize_chunk_supports(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q1_0: case GGML_TYPE_Q2_0: case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_0: case GGML_TYPE_MXFP4:
        case GGML_TYPE_NVFP4: case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K: case GGML_TYPE_TQ1_0: case GGML_TYPE_TQ2_0:
        case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ3_XXS: case GGML_TYPE_IQ3_S:
        case GGML_TYPE_IQ2_S: case GGML_TYPE_IQ1_S: case GGML_TYPE_IQ1_M: case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_IQ4_XS: case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_F32:
            return true;
        default:
            return false;
    }
}

// a ggml type from a request: an id (integer) or ggml_type_name (string);
// refuses ids out of range and retired types (block size 0)
enum ggml_type parse_ggml_type(const json & j, const std::string & where) {
    long long id = -1;
    if (j.is_number_integer()) {
        if (j.is_number_unsigned() && j.get<uint64_t>() > (uint64_t) GGML_TYPE_COUNT) {
            refuse(where + ": ggml type id " + j.dump() + " out of range [0, " + std::to_string(GGML_TYPE_COUNT) + ")");
        }
        id = j.get<long long>();
        if (id < 0 || id >= GGML_TYPE_COUNT) {
            refuse(where + ": ggml type id " + std::to_string(id) + " out of range [0, " + std::to_string(GGML_TYPE_COUNT) + ")");
        }
    } else if (j.is_string()) {
        const std::string s = j.get<std::string>();
        for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
            if (ggml_blck_size((enum ggml_type) i) == 0) continue;  // retired: "DEPRECATED"
            const char * name = ggml_type_name((enum ggml_type) i);
            if (name && s == name) { id = i; break; }
        }
        if (id < 0) refuse(where + ": unknown ggml type name " + j.dump() + " (use ggml_type_name spelling, e.g. \"q4_K\", or the id)");
    } else {
        refuse(where + ": expected a ggml type id or name, got " + j.dump());
    }
    const auto t = (enum ggml_type) id;
    if (ggml_blck_size(t) == 0) {
        refuse(where + ": ggml type " + std::to_string(id) + " is retired (block size 0)");
    }
    return t;
}

// ---------------------------------------------------------------------------
// request field helpers

const json & field(const json & req, const char * name) {
    auto it = req.find(name);
    if (it == req.end()) refuse(std::string("missing field \"") + name + "\"");
    return *it;
}

std::string get_string(const json & req, const char * name) {
    const json & j = field(req, name);
    if (!j.is_string()) refuse(std::string("field \"") + name + "\": expected a string, got " + j.dump());
    return j.get<std::string>();
}

bool get_bool(const json & req, const char * name, bool dflt) {
    auto it = req.find(name);
    if (it == req.end()) return dflt;
    if (!it->is_boolean()) refuse(std::string("field \"") + name + "\": expected true/false, got " + it->dump());
    return it->get<bool>();
}

int64_t get_int(const json & req, const char * name, int64_t lo, int64_t hi) {
    const json & j = field(req, name);
    if (!j.is_number_integer()) refuse(std::string("field \"") + name + "\": expected an integer, got " + j.dump());
    if (j.is_number_unsigned() && j.get<uint64_t>() > (uint64_t) INT64_MAX) {
        refuse(std::string("field \"") + name + "\": " + j.dump() + " out of range");
    }
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) {
        refuse(std::string("field \"") + name + "\": " + std::to_string(v) + " out of range [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
}

void check_fields(const json & obj, const std::set<std::string> & allowed, const std::string & where) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        if (!allowed.count(it.key())) refuse(where + ": unexpected field \"" + it.key() + "\"");
    }
}

// ---------------------------------------------------------------------------
// files

std::vector<uint8_t> read_file(const std::string & path) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) refuse("cannot open " + path + ": " + strerror(errno));
    std::vector<uint8_t> buf;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0) buf.reserve((size_t) st.st_size);
    uint8_t chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf.insert(buf.end(), chunk, chunk + n);
    const bool err = ferror(f);
    fclose(f);
    if (err) refuse("error reading " + path);
    return buf;
}

void write_file(const std::string & path, const void * data, size_t n) {
    FILE * f = fopen(path.c_str(), "wb");
    if (!f) refuse("cannot create " + path + ": " + strerror(errno));
    const size_t w = n ? fwrite(data, 1, n, f) : 0;
    const bool ok = (w == n) && fclose(f) == 0;
    if (!ok) refuse("error writing " + path);
}

// ---------------------------------------------------------------------------
// read: the file as ggml's gguf_init_from_file sees it

json kv_value(const struct gguf_context * g, int64_t i) {
    const enum gguf_type t = gguf_get_kv_type(g, i);
    switch (t) {
        case GGUF_TYPE_UINT8:   return gguf_get_val_u8(g, i);
        case GGUF_TYPE_INT8:    return gguf_get_val_i8(g, i);
        case GGUF_TYPE_UINT16:  return gguf_get_val_u16(g, i);
        case GGUF_TYPE_INT16:   return gguf_get_val_i16(g, i);
        case GGUF_TYPE_UINT32:  return gguf_get_val_u32(g, i);
        case GGUF_TYPE_INT32:   return gguf_get_val_i32(g, i);
        case GGUF_TYPE_FLOAT32: return json_float((double) gguf_get_val_f32(g, i));
        case GGUF_TYPE_BOOL:    return gguf_get_val_bool(g, i);
        case GGUF_TYPE_UINT64:  return gguf_get_val_u64(g, i);
        case GGUF_TYPE_INT64:   return gguf_get_val_i64(g, i);
        case GGUF_TYPE_FLOAT64: return json_float(gguf_get_val_f64(g, i));
        case GGUF_TYPE_STRING: {
            json j;
            put_string(j, gguf_get_val_str(g, i));
            return j;
        }
        case GGUF_TYPE_ARRAY: {
            const enum gguf_type et = gguf_get_arr_type(g, i);
            const size_t n = gguf_get_arr_n(g, i);
            json arr = json::array();
            if (et == GGUF_TYPE_STRING) {
                for (size_t k = 0; k < n; ++k) {
                    json s;
                    put_string(s, gguf_get_arr_str(g, i, k));
                    arr.push_back(std::move(s));
                }
                return arr;
            }
            const void * d = n ? gguf_get_arr_data(g, i) : nullptr;
            for (size_t k = 0; k < n; ++k) {
                switch (et) {
                    case GGUF_TYPE_UINT8:   arr.push_back(((const uint8_t  *) d)[k]); break;
                    case GGUF_TYPE_INT8:    arr.push_back(((const int8_t   *) d)[k]); break;
                    case GGUF_TYPE_UINT16:  arr.push_back(((const uint16_t *) d)[k]); break;
                    case GGUF_TYPE_INT16:   arr.push_back(((const int16_t  *) d)[k]); break;
                    case GGUF_TYPE_UINT32:  arr.push_back(((const uint32_t *) d)[k]); break;
                    case GGUF_TYPE_INT32:   arr.push_back(((const int32_t  *) d)[k]); break;
                    case GGUF_TYPE_FLOAT32: arr.push_back(json_float((double) ((const float *) d)[k])); break;
                    case GGUF_TYPE_BOOL:    arr.push_back(((const uint8_t  *) d)[k] != 0); break;
                    case GGUF_TYPE_UINT64:  arr.push_back(((const uint64_t *) d)[k]); break;
                    case GGUF_TYPE_INT64:   arr.push_back(((const int64_t  *) d)[k]); break;
                    case GGUF_TYPE_FLOAT64: arr.push_back(json_float(((const double *) d)[k])); break;
                    default: throw std::runtime_error("internal: unexpected array element type " + std::to_string((int) et));
                }
            }
            return arr;
        }
        default:
            throw std::runtime_error("internal: unexpected value type " + std::to_string((int) t));
    }
}

// n_dims as ggml_n_dims() computes it (ggml keeps 4 ne; trailing 1s are lost)
int n_dims_of(const int64_t * ne) {
    for (int i = GGML_MAX_DIMS - 1; i >= 1; --i) {
        if (ne[i] > 1) return i + 1;
    }
    return 1;
}

// the file JSON of a successfully read context. `tensors_ctx`: the ggml
// context gguf_init_from_file made (may be null), `skip_blob`: it starts with
// the "GGUF tensor data binary blob" tensor (full loads)
json dump_context(const struct gguf_context * g, const struct ggml_context * tctx, bool skip_blob) {
    json f;
    f["version"] = gguf_get_version(g);
    f["byte_order"] = "little";  // ggml reads host byte order only (and refuses swapped versions)
    f["alignment"] = (uint64_t) gguf_get_alignment(g);
    f["data_offset"] = (uint64_t) gguf_get_data_offset(g);

    json md = json::array();
    const int64_t n_kv = gguf_get_n_kv(g);
    for (int64_t i = 0; i < n_kv; ++i) {
        json e;
        json key;
        put_string(key, gguf_get_key(g, i));
        e["key"] = key;
        const enum gguf_type t = gguf_get_kv_type(g, i);
        e["type"] = VALUE_TYPE_NAMES[t];
        if (t == GGUF_TYPE_ARRAY) e["element_type"] = VALUE_TYPE_NAMES[gguf_get_arr_type(g, i)];
        e["value"] = kv_value(g, i);
        md.push_back(std::move(e));
    }
    f["metadata"] = std::move(md);

    std::vector<struct ggml_tensor *> ctx_tensors;
    if (tctx) {
        for (struct ggml_tensor * t = ggml_get_first_tensor(tctx); t; t = ggml_get_next_tensor(tctx, t)) {
            ctx_tensors.push_back(t);
        }
        if (skip_blob && !ctx_tensors.empty()) ctx_tensors.erase(ctx_tensors.begin());
    }
    json ts = json::array();
    const int64_t n_t = gguf_get_n_tensors(g);
    if (tctx && (int64_t) ctx_tensors.size() != n_t) {
        throw std::runtime_error("internal: ggml context has " + std::to_string(ctx_tensors.size()) +
                                 " tensors, gguf context " + std::to_string(n_t));
    }
    for (int64_t i = 0; i < n_t; ++i) {
        json e;
        json name;
        put_string(name, gguf_get_tensor_name(g, i));
        e["name"] = name;
        const enum ggml_type type = gguf_get_tensor_type(g, i);
        e["type"] = ggml_type_name(type);
        const int64_t * ne = gguf_get_tensor_ne(g, i);
        int nd = n_dims_of(ne);
        if (tctx) {
            const struct ggml_tensor * t = ctx_tensors[(size_t) i];
            for (int d = 0; d < GGML_MAX_DIMS; ++d) {
                if (t->ne[d] != ne[d]) throw std::runtime_error("internal: ggml tensor ne differs from gguf ne");
            }
            nd = ggml_n_dims(t);
        }
        e["ne"] = json::array({ne[0], ne[1], ne[2], ne[3]});
        json shape = json::array();
        for (int d = 0; d < nd; ++d) shape.push_back(ne[d]);
        e["shape"] = std::move(shape);
        e["offset"] = (uint64_t) gguf_get_tensor_offset(g, i);
        e["size"] = (uint64_t) gguf_get_tensor_size(g, i);
        ts.push_back(std::move(e));
    }
    f["tensors"] = std::move(ts);
    return f;
}

struct Loaded {
    struct gguf_context * g = nullptr;
    struct ggml_context * t = nullptr;
    ~Loaded() {
        if (t) ggml_free(t);
        if (g) gguf_free(g);
    }
};

// gguf_init_from_file; on failure refuses with ggml's log lines
void load(const std::string & path, bool full, bool with_ctx, Loaded & out) {
    g_log.clear();
    struct gguf_init_params p;
    p.no_alloc = !full;
    p.ctx = with_ctx ? &out.t : nullptr;
    out.g = gguf_init_from_file(path.c_str(), p);
    if (!out.g) {
        std::string msg = trim_log(g_log);
        if (msg.empty()) msg = "gguf_init_from_file returned NULL (ggml logged nothing)";
        refuse(msg);
    }
}

json op_read(const json & req) {
    check_fields(req, {"op", "id", "path", "full", "ctx"}, "read");
    const std::string path = get_string(req, "path");
    const bool full = get_bool(req, "full", false);
    const bool with_ctx = get_bool(req, "ctx", true);
    if (full && !with_ctx) refuse("\"full\":true needs \"ctx\":true (ggml loads the data into the ggml context)");
    Loaded L;
    load(path, full, with_ctx, L);
    json r;
    r["ok"] = true;
    r["file"] = dump_context(L.g, L.t, full);
    const std::string log = trim_log(g_log);
    if (!log.empty()) r["log"] = log;
    return r;
}

// ---------------------------------------------------------------------------
// write: the description built the way a ggml user would

struct KV {
    std::string key;
    int type = -1;        // gguf_type
    int elem = -1;        // element type for arrays
    std::vector<uint8_t> bytes;          // numeric/bool payload (little-endian)
    std::vector<std::string> strings;    // string payload
    json expected;        // the value as the reader JSON will show it
};

double parse_float(const json & v, bool f32, const std::string & where) {
    double d;
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        refuse(where + ": bad float string " + v.dump() + " (only \"nan\", \"inf\", \"-inf\")");
    }
    if (!v.is_number()) refuse(where + ": expected a number or \"nan\"/\"inf\"/\"-inf\", got " + v.dump());
    d = v.get<double>();
    if (v.is_number_integer()) {
        // exactness of big integers as doubles
        if (v.is_number_unsigned() ? d >= 18446744073709551616.0 || (uint64_t) d != v.get<uint64_t>()
                                   : d >= 9223372036854775808.0 || (int64_t) d != v.get<int64_t>()) {
            refuse(where + ": " + v.dump() + " is not exactly representable as a float");
        }
    }
    if (f32 && std::isfinite(d)) {
        if (std::fabs(d) > (double) std::numeric_limits<float>::max()) refuse(where + ": " + v.dump() + " is out of float32 range");
        const float f = (float) d;
        if ((double) f != d) {
            refuse(where + ": " + v.dump() + " is not exactly representable as float32 (gguf_set_val_f32 takes a float)");
        }
    }
    return d;
}

template <typename T>
void push_le(std::vector<uint8_t> & out, T v) {
    uint8_t b[sizeof(T)];
    memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
}

// one scalar of type t from JSON into kv.bytes / kv.strings; returns its expected JSON
json parse_scalar(const json & v, int t, KV & kv, const std::string & where) {
    auto int_in = [&](long double lo, long double hi) -> json {
        if (!v.is_number_integer()) refuse(where + ": expected an integer for " + VALUE_TYPE_NAMES[t] + ", got " + v.dump());
        if (v.is_number_unsigned()) {
            const uint64_t u = v.get<uint64_t>();
            if ((long double) u > hi) refuse(where + ": " + v.dump() + " out of range for " + VALUE_TYPE_NAMES[t]);
        } else {
            const int64_t s = v.get<int64_t>();
            if ((long double) s < lo || (long double) s > hi) refuse(where + ": " + v.dump() + " out of range for " + VALUE_TYPE_NAMES[t]);
        }
        return v;
    };
    switch (t) {
        case GGUF_TYPE_UINT8:   int_in(0, UINT8_MAX);  push_le<uint8_t>(kv.bytes, v.get<uint8_t>());   return v.get<uint8_t>();
        case GGUF_TYPE_INT8:    int_in(INT8_MIN, INT8_MAX);   push_le<int8_t>(kv.bytes, v.get<int8_t>());   return v.get<int8_t>();
        case GGUF_TYPE_UINT16:  int_in(0, UINT16_MAX); push_le<uint16_t>(kv.bytes, v.get<uint16_t>()); return v.get<uint16_t>();
        case GGUF_TYPE_INT16:   int_in(INT16_MIN, INT16_MAX); push_le<int16_t>(kv.bytes, v.get<int16_t>()); return v.get<int16_t>();
        case GGUF_TYPE_UINT32:  int_in(0, UINT32_MAX); push_le<uint32_t>(kv.bytes, v.get<uint32_t>()); return v.get<uint32_t>();
        case GGUF_TYPE_INT32:   int_in(INT32_MIN, INT32_MAX); push_le<int32_t>(kv.bytes, v.get<int32_t>()); return v.get<int32_t>();
        case GGUF_TYPE_UINT64:  int_in(0, (long double) UINT64_MAX); push_le<uint64_t>(kv.bytes, v.get<uint64_t>()); return v.get<uint64_t>();
        case GGUF_TYPE_INT64:
            if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t) INT64_MAX) refuse(where + ": " + v.dump() + " out of range for int64");
            int_in((long double) INT64_MIN, (long double) INT64_MAX);
            push_le<int64_t>(kv.bytes, v.get<int64_t>());
            return v.get<int64_t>();
        case GGUF_TYPE_FLOAT32: {
            const float f = (float) parse_float(v, true, where);
            push_le<float>(kv.bytes, f);
            return json_float((double) f);
        }
        case GGUF_TYPE_FLOAT64: {
            const double d = parse_float(v, false, where);
            push_le<double>(kv.bytes, d);
            return json_float(d);
        }
        case GGUF_TYPE_BOOL:
            if (!v.is_boolean()) refuse(where + ": expected true/false for bool, got " + v.dump());
            kv.bytes.push_back(v.get<bool>() ? 1 : 0);
            return v.get<bool>();
        case GGUF_TYPE_STRING: {
            if (!v.is_string()) refuse(where + ": expected a string, got " + v.dump());
            const std::string s = v.get<std::string>();
            if (s.find('\0') != std::string::npos) {
                refuse(where + ": string with a NUL byte: gguf_set_val_str/gguf_set_arr_str take C strings "
                       "(the value would be cut at the NUL)");
            }
            kv.strings.push_back(s);
            return s;
        }
        default:
            refuse(where + ": " + VALUE_TYPE_NAMES[t] + " is not a scalar type");
    }
}

int parse_value_type(const json & j, const std::string & where) {
    if (!j.is_string()) refuse(where + ": expected a value type name, got " + j.dump());
    const int t = value_type_from_name(j.get<std::string>());
    if (t < 0) refuse(where + ": unknown value type " + j.dump());
    return t;
}

KV parse_kv(const json & e, size_t idx) {
    std::string where = "metadata[" + std::to_string(idx) + "]";
    if (!e.is_object()) refuse(where + ": expected an object, got " + e.dump());
    KV kv;
    const json & key = e.contains("key") ? e["key"] : json();
    if (!key.is_string()) refuse(where + ".key: expected a string, got " + key.dump());
    kv.key = key.get<std::string>();
    where += " (" + key.dump() + ")";
    if (kv.key.empty()) refuse(where + ": empty key: ggml's gguf_kv constructor GGML_ASSERTs !key.empty() (and its reader refuses empty keys)");
    if (kv.key.find('\0') != std::string::npos) refuse(where + ": key with a NUL byte: gguf_set_val_* take the key as a C string");
    if (!e.contains("type")) refuse(where + ": missing \"type\"");
    kv.type = parse_value_type(e["type"], where + ".type");
    if (!e.contains("value")) refuse(where + ": missing \"value\"");
    check_fields(e, kv.type == GGUF_TYPE_ARRAY ? std::set<std::string>{"key", "type", "element_type", "value"}
                                               : std::set<std::string>{"key", "type", "value"}, where);
    const json & v = e["value"];
    if (kv.type != GGUF_TYPE_ARRAY) {
        kv.expected = parse_scalar(v, kv.type, kv, where + ".value");
        return kv;
    }
    if (!e.contains("element_type")) refuse(where + ": missing \"element_type\"");
    kv.elem = parse_value_type(e["element_type"], where + ".element_type");
    if (kv.elem == GGUF_TYPE_ARRAY) {
        refuse(where + ": nested array: ggml cannot express it (gguf_set_arr_data takes a flat buffer of one scalar type, "
               "and gguf_init_from_file refuses nested arrays)");
    }
    if (!v.is_array()) refuse(where + ".value: expected a list, got " + v.dump());
    kv.expected = json::array();
    for (size_t k = 0; k < v.size(); ++k) {
        kv.expected.push_back(parse_scalar(v[k], kv.elem, kv, where + ".value[" + std::to_string(k) + "]"));
    }
    return kv;
}

struct TensorDesc {
    std::string name;
    enum ggml_type type;
    std::vector<int64_t> shape;
    int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
    size_t nbytes = 0;
    std::vector<uint8_t> data;
    const json * src = nullptr;
};

std::vector<uint8_t> parse_hex(const std::string & s, const std::string & where) {
    if (s.size() % 2) refuse(where + ": odd number of hex digits");
    std::vector<uint8_t> out(s.size() / 2);
    auto nib = [&](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        refuse(where + ": not a hex digit: '" + std::string(1, c) + "'");
    };
    for (size_t i = 0; i < out.size(); ++i) out[i] = (uint8_t) (nib(s[2 * i]) << 4 | nib(s[2 * i + 1]));
    return out;
}

TensorDesc parse_tensor(const json & t, size_t idx) {
    std::string where = "tensors[" + std::to_string(idx) + "]";
    if (!t.is_object()) refuse(where + ": expected an object, got " + t.dump());
    check_fields(t, {"name", "type", "shape", "offset", "size", "data_hex", "ne"}, where);
    TensorDesc d;
    d.src = &t;
    const json & name = t.contains("name") ? t["name"] : json();
    if (!name.is_string()) refuse(where + ".name: expected a string, got " + name.dump());
    d.name = name.get<std::string>();
    where += " (" + name.dump() + ")";
    if (d.name.size() >= GGML_MAX_NAME) {
        refuse(where + ": name of " + std::to_string(d.name.size()) + " bytes: ggml_set_name keeps at most " +
               std::to_string(GGML_MAX_NAME - 1) + " (GGML_MAX_NAME " + std::to_string(GGML_MAX_NAME) +
               " with the NUL), and gguf_init_from_file refuses longer names");
    }
    if (d.name.find('\0') != std::string::npos) refuse(where + ": name with a NUL byte: ggml_set_name takes a C string");
    if (!t.contains("type")) refuse(where + ": missing \"type\"");
    d.type = parse_ggml_type(t["type"], where + ".type");
    const json & shape = t.contains("shape") ? t["shape"] : json();
    if (!shape.is_array()) refuse(where + ".shape: expected a list of non-negative integers, got " + shape.dump());
    if (shape.empty()) {
        refuse(where + ": 0 dimensions: ggml_new_tensor needs 1 <= n_dims <= " + std::to_string(GGML_MAX_DIMS) +
               " (GGML_ASSERT), and ggml writes n_dims = ggml_n_dims() >= 1");
    }
    if (shape.size() > GGML_MAX_DIMS) {
        refuse(where + ": " + std::to_string(shape.size()) + " dimensions: ggml has at most GGML_MAX_DIMS = " +
               std::to_string(GGML_MAX_DIMS));
    }
    for (size_t k = 0; k < shape.size(); ++k) {
        const json & v = shape[k];
        if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<uint64_t>() > (uint64_t) INT64_MAX : v.get<int64_t>() < 0)) {
            refuse(where + ".shape[" + std::to_string(k) + "]: expected an integer in [0, 2^63), got " + v.dump());
        }
        d.ne[k] = v.get<int64_t>();
        d.shape.push_back(d.ne[k]);
    }
    const int64_t blck = ggml_blck_size(d.type);
    if (d.ne[0] % blck != 0) {
        refuse(where + ": ne[0] = " + std::to_string(d.ne[0]) + " is not a multiple of the " + ggml_type_name(d.type) +
               " block size " + std::to_string(blck));
    }
    // element count and byte size, checked (ggml_new_tensor GGML_ASSERTs INT64_MAX / ne[i] > count)
    unsigned __int128 bytes = (unsigned __int128) (d.ne[0] / blck) * ggml_type_size(d.type);
    int64_t count = d.ne[0];
    for (int k = 1; k < GGML_MAX_DIMS; ++k) {
        if (d.ne[k] > 1 && INT64_MAX / d.ne[k] <= count) refuse(where + ": element count overflows int64 (ggml_new_tensor would GGML_ASSERT)");
        count *= d.ne[k];
        bytes *= (unsigned __int128) d.ne[k];
        if (bytes > (unsigned __int128) SIZE_MAX) refuse(where + ": byte size overflows size_t");
    }
    d.nbytes = (size_t) bytes;
    const json & hex = t.contains("data_hex") ? t["data_hex"] : json();
    if (!hex.is_string()) refuse(where + ".data_hex: expected a hex string");
    if (hex.get_ref<const std::string &>().size() / 2 != d.nbytes || hex.get_ref<const std::string &>().size() % 2) {
        refuse(where + ": data_hex has " + std::to_string(hex.get_ref<const std::string &>().size() / 2) + " bytes, a " +
               ggml_type_name(d.type) + " tensor of shape " + shape.dump() + " has " + std::to_string(d.nbytes));
    }
    d.data = parse_hex(hex.get<std::string>(), where + ".data_hex");
    if (t.contains("size") && !(t["size"].is_number_unsigned() && t["size"].get<uint64_t>() == d.nbytes)) {
        refuse(where + ".size: " + t["size"].dump() + " but a " + ggml_type_name(d.type) + " tensor of shape " + shape.dump() +
               " has " + std::to_string(d.nbytes) + " bytes");
    }
    return d;
}

std::string shape_str(const std::vector<int64_t> & s) {
    json j = s;
    return j.dump();
}

void remove_quietly(const std::string & p) { ::unlink(p.c_str()); }

json op_write(const json & req) {
    check_fields(req, {"op", "id", "desc", "out", "force"}, "write");
    const std::string out = get_string(req, "out");
    const bool force = get_bool(req, "force", false);
    const json & desc = field(req, "desc");
    if (!desc.is_object()) refuse("desc: expected an object");
    check_fields(desc, {"version", "byte_order", "alignment", "data_offset", "metadata", "tensors"}, "desc");

    // --- what ggml cannot express at all
    if (desc.contains("version")) {
        const json & v = desc["version"];
        if (!v.is_number_integer() || !v.is_number_unsigned() || v.get<uint64_t>() != GGUF_VERSION) {
            refuse("version " + v.dump() + ": ggml writes GGUF version " + std::to_string(GGUF_VERSION) +
                   " only (gguf_init_empty sets it; there is no setter)");
        }
    }
    if (desc.contains("byte_order")) {
        const json & b = desc["byte_order"];
        if (b == "big") refuse("byte_order \"big\": ggml writes host byte order (little-endian) only");
        if (b != "little") refuse("byte_order: expected \"little\" or \"big\", got " + b.dump());
    }
    const json empty = json::array();
    const json & metadata = desc.contains("metadata") ? desc["metadata"] : empty;
    const json & tensors = desc.contains("tensors") ? desc["tensors"] : empty;
    if (!metadata.is_array()) refuse("metadata: expected a list");
    if (!tensors.is_array()) refuse("tensors: expected a list");

    std::vector<KV> kvs;
    std::set<std::string> seen;
    uint64_t declared_alignment = GGUF_DEFAULT_ALIGNMENT;
    bool has_alignment_key = false;
    for (size_t i = 0; i < metadata.size(); ++i) {
        KV kv = parse_kv(metadata[i], i);
        if (!seen.insert(kv.key).second) {
            refuse("metadata[" + std::to_string(i) + "]: duplicate key \"" + kv.key + "\": gguf_set_val_* removes an "
                   "existing key and appends the new value at the end, so a file has each key once");
        }
        if (kv.key == GGUF_KEY_GENERAL_ALIGNMENT) {
            if (kv.type != GGUF_TYPE_UINT32) {
                refuse("metadata[" + std::to_string(i) + "]: " GGUF_KEY_GENERAL_ALIGNMENT " of type " +
                       VALUE_TYPE_NAMES[kv.type] + ": ggml GGML_ABORTs (\"" GGUF_KEY_GENERAL_ALIGNMENT " must be type u32\")");
            }
            const uint32_t a = kv.expected.get<uint32_t>();
            if (a == 0 || (a & (a - 1)) != 0) {
                refuse("metadata[" + std::to_string(i) + "]: " GGUF_KEY_GENERAL_ALIGNMENT " = " + std::to_string(a) +
                       ": ggml GGML_ASSERTs it is a non-zero power of 2");
            }
            declared_alignment = a;
            has_alignment_key = true;
        }
        kvs.push_back(std::move(kv));
    }
    if (desc.contains("alignment")) {
        const json & a = desc["alignment"];
        if (!a.is_number_unsigned() || a.get<uint64_t>() != declared_alignment) {
            refuse("alignment " + a.dump() + " but the file declares " + std::to_string(declared_alignment) +
                   (has_alignment_key ? " (its " GGUF_KEY_GENERAL_ALIGNMENT " key)" : " (no " GGUF_KEY_GENERAL_ALIGNMENT " key: default)") +
                   "; ggml has no way to set the context's alignment other than that key");
        }
    }

    std::vector<TensorDesc> tds;
    std::set<std::string> names;
    size_t mem = 1024;
    for (size_t i = 0; i < tensors.size(); ++i) {
        tds.push_back(parse_tensor(tensors[i], i));
        const TensorDesc & d = tds.back();
        if (!names.insert(d.name).second) {
            refuse("tensors[" + std::to_string(i) + "]: duplicate tensor name \"" + d.name + "\": gguf_add_tensor GGML_ABORTs");
        }
        mem += ggml_tensor_overhead() + GGML_PAD(d.nbytes, GGML_MEM_ALIGN) + GGML_MEM_ALIGN;
    }

    // --- what ggml would write differently from the description (refused unless force)
    std::vector<std::string> unfaithful;
    for (size_t i = 0; i < tds.size(); ++i) {
        const TensorDesc & d = tds[i];
        const int nd = n_dims_of(d.ne);
        if ((size_t) nd != d.shape.size()) {
            std::vector<int64_t> w(d.ne, d.ne + nd);
            std::string m = "tensors[" + std::to_string(i) + "] (\"" + d.name + "\"): shape " + shape_str(d.shape) +
                            " would be written as " + shape_str(w) + " (ggml writes n_dims = ggml_n_dims(), which drops "
                            "trailing dimensions of size 1 or 0)";
            if (d.nbytes == 0 && ggml_row_size(d.type, d.ne[0]) != 0) m += ", with 0 data bytes for a header that implies more";
            unfaithful.push_back(m);
        }
    }
    if (declared_alignment != GGUF_DEFAULT_ALIGNMENT) {
        unfaithful.push_back(std::string(GGUF_KEY_GENERAL_ALIGNMENT " = ") + std::to_string(declared_alignment) +
                             ": ggml's writer pads by the context's alignment, which gguf_init_empty sets to " +
                             std::to_string(GGUF_DEFAULT_ALIGNMENT) + " and gguf_set_val_u32 does not change");
    }
    if (!unfaithful.empty() && !force) {
        std::string m = "ggml would not write this description faithfully (\"force\":true writes it anyway): ";
        for (size_t i = 0; i < unfaithful.size(); ++i) m += (i ? "; " : "") + unfaithful[i];
        refuse(m);
    }

    // --- build it as a ggml user would
    g_log.clear();
    struct gguf_context * g = gguf_init_empty();
    struct ggml_init_params ip = {mem, nullptr, false};
    struct ggml_context * tctx = ggml_init(ip);
    struct Guard {
        struct gguf_context * g; struct ggml_context * t;
        ~Guard() { if (t) ggml_free(t); if (g) gguf_free(g); }
    } guard{g, tctx};

    for (const KV & kv : kvs) {
        const char * k = kv.key.c_str();
        const uint8_t * b = kv.bytes.data();
        auto rd = [&](auto dummy) { decltype(dummy) v; memcpy(&v, b, sizeof(v)); return v; };
        switch (kv.type) {
            case GGUF_TYPE_UINT8:   gguf_set_val_u8(g, k, rd(uint8_t())); break;
            case GGUF_TYPE_INT8:    gguf_set_val_i8(g, k, rd(int8_t())); break;
            case GGUF_TYPE_UINT16:  gguf_set_val_u16(g, k, rd(uint16_t())); break;
            case GGUF_TYPE_INT16:   gguf_set_val_i16(g, k, rd(int16_t())); break;
            case GGUF_TYPE_UINT32:  gguf_set_val_u32(g, k, rd(uint32_t())); break;
            case GGUF_TYPE_INT32:   gguf_set_val_i32(g, k, rd(int32_t())); break;
            case GGUF_TYPE_FLOAT32: gguf_set_val_f32(g, k, rd(float())); break;
            case GGUF_TYPE_UINT64:  gguf_set_val_u64(g, k, rd(uint64_t())); break;
            case GGUF_TYPE_INT64:   gguf_set_val_i64(g, k, rd(int64_t())); break;
            case GGUF_TYPE_FLOAT64: gguf_set_val_f64(g, k, rd(double())); break;
            case GGUF_TYPE_BOOL:    gguf_set_val_bool(g, k, b[0] != 0); break;
            case GGUF_TYPE_STRING:  gguf_set_val_str(g, k, kv.strings[0].c_str()); break;
            case GGUF_TYPE_ARRAY:
                if (kv.elem == GGUF_TYPE_STRING) {
                    std::vector<const char *> ptrs;
                    for (const std::string & s : kv.strings) ptrs.push_back(s.c_str());
                    gguf_set_arr_str(g, k, ptrs.data(), ptrs.size());
                } else {
                    gguf_set_arr_data(g, k, (enum gguf_type) kv.elem, kv.bytes.data(), kv.expected.size());
                }
                break;
            default:
                throw std::runtime_error("internal: bad kv type");
        }
    }
    std::vector<std::string> zero_size;
    for (const TensorDesc & d : tds) {
        const int nd = (int) d.shape.size();
        struct ggml_tensor * t = ggml_new_tensor(tctx, d.type, nd, d.ne);
        if (!t) throw std::runtime_error("internal: ggml_new_tensor returned NULL");
        ggml_set_name(t, d.name.c_str());
        if (ggml_nbytes(t) != d.nbytes) {
            throw std::runtime_error("internal: ggml_nbytes " + std::to_string(ggml_nbytes(t)) + " != " + std::to_string(d.nbytes));
        }
        if (d.nbytes) {
            memcpy(t->data, d.data.data(), d.nbytes);
        } else if (t->data == nullptr) {
            // ggml_new_tensor leaves data NULL for a 0-byte tensor, and
            // gguf_write_to_file GGML_ASSERTs info.t.data even when it has
            // nothing to copy: point it at a dummy byte, as a ggml user must
            static uint8_t dummy = 0;
            t->data = &dummy;
            zero_size.push_back(d.name);
        }
        gguf_add_tensor(g, t);
    }

    // the layout ggml chose, against optional offsets / sizes / data_offset of the description
    const size_t meta_size = gguf_get_meta_size(g);
    for (size_t i = 0; i < tds.size(); ++i) {
        const json & t = *tds[i].src;
        const size_t off = gguf_get_tensor_offset(g, (int64_t) i);
        if (t.contains("offset") && !(t["offset"].is_number_unsigned() && t["offset"].get<uint64_t>() == off)) {
            refuse("tensors[" + std::to_string(i) + "] (\"" + tds[i].name + "\").offset: " + t["offset"].dump() +
                   " but ggml puts this tensor at " + std::to_string(off) + " (each tensor at the previous offset + size "
                   "rounded up to the context's alignment " + std::to_string(GGUF_DEFAULT_ALIGNMENT) + ")");
        }
    }
    if (desc.contains("data_offset")) {
        const json & o = desc["data_offset"];
        if (!(o.is_number_unsigned() && o.get<uint64_t>() == meta_size)) {
            refuse("data_offset " + o.dump() + " but ggml's writer starts the data section at " + std::to_string(meta_size) +
                   " (gguf_get_meta_size: header padded to the context's alignment, also without tensors)");
        }
    }

    // --- write to a temporary file beside OUT, check, rename
    std::string dir = ".", base = out;
    const size_t slash = out.rfind('/');
    if (slash != std::string::npos) { dir = out.substr(0, slash + 1); base = out.substr(slash + 1); if (dir.empty()) dir = "/"; }
    const std::string tmp = (slash != std::string::npos ? dir : std::string()) + "." + base + ".tmp-" + std::to_string(getpid());
    if (!gguf_write_to_file(g, tmp.c_str(), /*only_meta=*/false)) {
        remove_quietly(tmp);
        std::string msg = trim_log(g_log);
        refuse(msg.empty() ? "gguf_write_to_file failed" : msg);
    }

    json r;
    r["ok"] = true;
    struct stat st;
    r["bytes"] = (uint64_t) (stat(tmp.c_str(), &st) == 0 ? st.st_size : 0);
    r["data_offset"] = (uint64_t) meta_size;

    // read back with ggml's own reader (full load) and compare with the description
    json readback;
    std::string mismatch;
    {
        Loaded L;
        try {
            load(tmp, /*full=*/true, /*with_ctx=*/true, L);
            readback = json{{"ok", true}, {"file", dump_context(L.g, L.t, true)}};
        } catch (const Refused & e) {
            readback = json{{"ok", false}, {"error", e.what()}};
            mismatch = std::string("ggml's own reader refuses the file it wrote: ") + e.what();
        }
        if (mismatch.empty()) {
            const json & got = readback["file"];
            json exp_md = json::array();
            for (const KV & kv : kvs) {
                json e;
                e["key"] = kv.key;
                e["type"] = VALUE_TYPE_NAMES[kv.type];
                if (kv.type == GGUF_TYPE_ARRAY) e["element_type"] = VALUE_TYPE_NAMES[kv.elem];
                e["value"] = kv.expected;
                exp_md.push_back(std::move(e));
            }
            json exp_t = json::array();
            uint64_t off = 0;
            for (const TensorDesc & d : tds) {
                json e;
                e["name"] = d.name;
                e["type"] = ggml_type_name(d.type);
                e["ne"] = json::array({d.ne[0], d.ne[1], d.ne[2], d.ne[3]});
                e["shape"] = d.shape;
                e["offset"] = off;
                e["size"] = (uint64_t) d.nbytes;
                exp_t.push_back(std::move(e));
                off += GGML_PAD(d.nbytes, declared_alignment);
            }
            const json exp_v = GGUF_VERSION;
            const json exp_a = declared_alignment;
            if (got["version"] != exp_v) mismatch = "version " + got["version"].dump();
            else if (got["alignment"] != exp_a) mismatch = "alignment " + got["alignment"].dump() + ", expected " + exp_a.dump();
            else if (!tds.empty() && got["data_offset"] != json((uint64_t) meta_size)) {
                mismatch = "data_offset " + got["data_offset"].dump() + ", but the writer put the data at " + std::to_string(meta_size);
            } else if (got["metadata"].dump() != exp_md.dump()) {
                mismatch = "metadata " + got["metadata"].dump().substr(0, 500) + ", expected " + exp_md.dump().substr(0, 500);
            } else if (got["tensors"].dump() != exp_t.dump()) {
                mismatch = "tensors " + got["tensors"].dump().substr(0, 500) + ", expected " + exp_t.dump().substr(0, 500);
            } else {
                // tensor bytes, as ggml loaded them
                std::vector<struct ggml_tensor *> ts;
                for (struct ggml_tensor * t = ggml_get_first_tensor(L.t); t; t = ggml_get_next_tensor(L.t, t)) ts.push_back(t);
                for (size_t i = 0; i < tds.size() && mismatch.empty(); ++i) {
                    const struct ggml_tensor * t = ts[i + 1];  // [0] is the binary blob
                    if (tds[i].nbytes && memcmp(t->data, tds[i].data.data(), tds[i].nbytes) != 0) {
                        mismatch = "data of tensor \"" + tds[i].name + "\" differs";
                    }
                }
            }
            if (!mismatch.empty()) mismatch = "read-back mismatch (ggml's reader on ggml's file): " + mismatch;
        }
    }
    if (!mismatch.empty() && !force) {
        remove_quietly(tmp);
        refuse(mismatch);
    }
    if (::rename(tmp.c_str(), out.c_str()) != 0) {
        const int e = errno;
        remove_quietly(tmp);
        refuse("cannot rename " + tmp + " to " + out + ": " + strerror(e));
    }
    if (!zero_size.empty()) {
        json z = json::array();
        for (const std::string & n : zero_size) z.push_back(n);
        r["zero_size_data_pointer_set"] = z;
    }
    if (force) {
        r["forced"] = true;
        json u = json::array();
        for (const std::string & s : unfaithful) u.push_back(s);
        r["unfaithful"] = u;
        if (!mismatch.empty()) r["mismatch"] = mismatch;
        r["readback"] = readback;
    }
    const std::string log = trim_log(g_log);
    if (!log.empty()) r["log"] = log;
    return r;
}

// ---------------------------------------------------------------------------
// types

bool retired(enum ggml_type t) { return ggml_blck_size(t) == 0; }

// what the dequantize op accepts: a to_float in the type traits, or q8_K's
// ggml-quants.h function (see prepare_dequantize)
bool dequantize_supported(enum ggml_type t) {
    if (retired(t)) return false;
    return ggml_get_type_traits(t)->to_float != nullptr || t == GGML_TYPE_Q8_K;
}

// what the quantize op accepts without "ref" (see prepare_quantize)
bool quantize_supported(enum ggml_type t) {
    if (retired(t)) return false;
    return quantize_chunk_supports(t) && !ggml_quantize_requires_imatrix(t);
}

json op_types(const json & req) {
    check_fields(req, {"op", "id"}, "types");
    json types = json::array();
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const auto t = (enum ggml_type) i;
        const struct ggml_type_traits * tr = ggml_get_type_traits(t);
        json e;
        e["id"] = i;
        const char * name = ggml_type_name(t);
        e["name"] = name ? json(name) : json();
        e["blck"] = ggml_blck_size(t);
        e["size"] = (uint64_t) ggml_type_size(t);
        e["quantized"] = ggml_is_quantized(t);
        e["to_float"] = tr->to_float != nullptr;
        e["from_float_ref"] = tr->from_float_ref != nullptr;
        e["requires_imatrix"] = ggml_quantize_requires_imatrix(t);
        e["quantize_chunk"] = quantize_chunk_supports(t);  // the adapter's reading of ggml_quantize_chunk's switch
        // the generic flags every peer's "types" has: what the dequantize op,
        // and the quantize op without "ref", accept
        e["dequantize"] = dequantize_supported(t);
        e["quantize"] = quantize_supported(t);
        types.push_back(std::move(e));
    }
    json r;
    r["ok"] = true;
    r["count"] = (int) GGML_TYPE_COUNT;
    r["ggml_version"] = ggml_version();
    r["ggml_commit"] = ggml_commit();
    r["gguf_version"] = GGUF_VERSION;
    r["default_alignment"] = GGUF_DEFAULT_ALIGNMENT;
    r["max_name"] = GGML_MAX_NAME;
    r["max_dims"] = GGML_MAX_DIMS;
    r["types"] = std::move(types);
    return r;
}

// ---------------------------------------------------------------------------
// capabilities: what this peer reads and writes, in the generic form every
// adapter answers (conform/peers/README.md, "Generic peer protocol"). Each
// value was verified by running the adapter (README, "Capabilities of the
// ggml adapter"); the type lists come from ggml itself.

json op_capabilities(const json & req) {
    check_fields(req, {"op", "id"}, "capabilities");
    json all_types = json::array(), scalar_types = json::array();
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const auto t = (enum ggml_type) i;
        if (retired(t)) continue;
        all_types.push_back(ggml_type_name(t));
        // a 0-dimension tensor is one element: only types whose block is one
        // element pass the reader's ne[0] % block check (it reads as ne [1,1,1,1])
        if (ggml_blck_size(t) == 1) scalar_types.push_back(ggml_type_name(t));
    }
    json limits_read;
    limits_read["max_string_bytes"] = 1024LL * 1024 * 1024;   // GGUF_MAX_STRING_LENGTH
    limits_read["max_array_len"] = 1024LL * 1024 * 1024;      // GGUF_MAX_ARRAY_ELEMENTS
    limits_read["max_dims"] = GGML_MAX_DIMS;
    limits_read["max_tensor_name_bytes"] = GGML_MAX_NAME - 1;

    json rd;
    rd["versions"] = json::array({2, 3});              // v1: "GGUFv1 is no longer supported"; > 3 refused
    rd["byte_orders"] = json::array({"little"});       // a byte-swapped version is refused
    rd["max_array_depth"] = 1;                         // "has invalid GGUF type 9" for arrays of arrays
    rd["strict_utf8"] = false;                         // not checked
    rd["invalid_utf8_as"] = "hex";                     // reported exactly: {"hex": bytes}
    rd["strict_bools"] = false;                        // any non-zero byte is true
    rd["keeps_dimension_count"] = false;               // four ne padded with 1: compare "ne"
    rd["alignment"] = "power_of_two";                  // "is not a power of 2" otherwise; must be u32
    rd["layout"] = "ggml";                             // "tensor 'b' has offset 64, expected 32"
    rd["magic_fugg"] = false;
    rd["tensor_types"] = all_types;
    rd["scalar_tensor_types"] = scalar_types;
    rd["full_load"] = true;
    rd["tensor_size"] = true;                          // "size" = ggml_nbytes
    rd["nested_element_types"] = true;                 // (no nested arrays at all)
    rd["strings_with_nul"] = false;                    // C strings: cut at the first NUL
    rd["leading_bom_kept"] = true;
    rd["padded_data_offset_without_tensors"] = false;  // data_offset = unpadded end of the header
    rd["key_order"] = "file";
    rd["unreadable_keys"] = json::array();
    rd["limits"] = limits_read;

    json limits_write;
    limits_write["max_dims"] = GGML_MAX_DIMS;
    limits_write["max_tensor_name_bytes"] = GGML_MAX_NAME - 1;

    json wr;
    wr["versions"] = json::array({GGUF_VERSION});      // gguf_init_empty sets it; no setter
    wr["byte_orders"] = json::array({"little"});       // host order only
    wr["empty_arrays"] = true;
    wr["max_array_depth"] = 1;                         // gguf_set_arr_data takes a flat buffer
    wr["inner_array_types"] = nullptr;                 // (no nested arrays at all)
    wr["top_inner_array_types"] = nullptr;
    wr["nan_payloads"] = false;                        // the description says "nan": written as the quiet NaN
    wr["alignments"] = json::array({GGUF_DEFAULT_ALIGNMENT}); // the writer pads by 32 whatever general.alignment says
    wr["layout"] = "ggml";
    wr["tensor_types"] = all_types;
    wr["scalar_tensor_types"] = json::array();         // ggml_new_tensor needs 1 <= n_dims <= 4
    wr["zero_size_tensors"] = true;                    // with t->data pointed at a dummy byte (see op_write)
    wr["keeps_dimension_count"] = false;               // n_dims = ggml_n_dims(): trailing 1s and 0s dropped
    wr["strings_with_nul"] = false;                    // keys/strings/names are C strings: refused
    wr["empty_keys"] = false;                          // GGML_ASSERT(!key.empty())
    wr["limits"] = limits_write;

    json r;
    r["ok"] = true;
    r["name"] = "ggml";
    r["version"] = ggml_version();
    r["commit"] = ggml_commit();
    r["source"] = "llama-cpp-python 0.3.36 sdist, vendored llama.cpp 0c1e57098bba43ac29e6e3b677cdceebdd22334f, static ggml-base";
    r["ops"] = json::array({"capabilities", "read", "write", "types", "dequantize", "quantize", "bench"});
    // ggml's value types (GGUF_TYPE_COUNT of them), by the spec's names
    json value_types = json::array();
    for (int i = 0; i < GGUF_TYPE_COUNT; ++i) value_types.push_back(VALUE_TYPE_NAMES[i]);
    r["value_types"] = std::move(value_types);
    r["read"] = std::move(rd);
    r["write"] = std::move(wr);
    return r;
}

// ---------------------------------------------------------------------------
// dequantize / quantize / bench

using to_float_fn = void (*)(const void *, float *, int64_t);
using from_float_fn = void (*)(const float *, void *, int64_t);

struct DequantJob {
    enum ggml_type type;
    int64_t n;
    to_float_fn fn;
    std::vector<uint8_t> in;
};

DequantJob prepare_dequantize(const json & req) {
    DequantJob j;
    j.type = parse_ggml_type(field(req, "type"), "type");
    j.n = get_int(req, "n", 0, INT64_MAX);
    const int64_t blck = ggml_blck_size(j.type);
    if (j.n % blck) refuse("n = " + std::to_string(j.n) + " is not a multiple of the " + ggml_type_name(j.type) + " block size " + std::to_string(blck));
    if ((uint64_t) j.n > (uint64_t) 1 << 40) refuse("n too large");
    const size_t need = (size_t) (j.n / blck) * ggml_type_size(j.type);
    j.fn = (to_float_fn) ggml_get_type_traits(j.type)->to_float;
    if (!j.fn && j.type == GGML_TYPE_Q8_K) j.fn = (to_float_fn) dequantize_row_q8_K;  // ggml-quants.h
    if (!j.fn) refuse(std::string("no to_float for ") + ggml_type_name(j.type) + " (ggml_get_type_traits()->to_float is NULL)");
    j.in = read_file(get_string(req, "input"));
    if (j.in.size() != need) {
        refuse("input has " + std::to_string(j.in.size()) + " bytes, " + std::to_string(j.n) + " elements of " +
               ggml_type_name(j.type) + " are " + std::to_string(need));
    }
    return j;
}

struct QuantJob {
    enum ggml_type type;
    int64_t nrows, n_per_row;
    bool ref;
    from_float_fn ref_fn = nullptr;
    std::vector<float> in;
    std::vector<float> imatrix;  // empty: none
    size_t out_bytes;
};

QuantJob prepare_quantize(const json & req) {
    QuantJob j;
    j.type = parse_ggml_type(field(req, "type"), "type");
    j.nrows = get_int(req, "nrows", 0, (int64_t) 1 << 40);
    j.n_per_row = get_int(req, "n_per_row", 1, (int64_t) 1 << 40);
    j.ref = get_bool(req, "ref", false);
    const int64_t blck = ggml_blck_size(j.type);
    const char * tn = ggml_type_name(j.type);
    if (j.n_per_row % blck) refuse("n_per_row = " + std::to_string(j.n_per_row) + " is not a multiple of the " + tn + " block size " + std::to_string(blck));
    if ((unsigned __int128) j.nrows * (unsigned __int128) j.n_per_row > ((unsigned __int128) 1 << 40)) refuse("nrows * n_per_row too large");
    if (j.ref) {
        j.ref_fn = (from_float_fn) ggml_get_type_traits(j.type)->from_float_ref;
        if (!j.ref_fn && j.type == GGML_TYPE_Q8_K) j.ref_fn = (from_float_fn) quantize_row_q8_K_ref;  // ggml-quants.h
        if (!j.ref_fn) refuse(std::string("no from_float_ref for ") + tn + " (ggml_get_type_traits()->from_float_ref is NULL)");
        if (ggml_quantize_requires_imatrix(j.type)) {
            refuse(std::string("ggml_quantize_requires_imatrix(") + tn + "): its reference quantizer needs an importance matrix");
        }
    } else {
        if (req.contains("imatrix")) {
            std::vector<uint8_t> w = read_file(get_string(req, "imatrix"));
            if (w.size() != (size_t) j.n_per_row * sizeof(float)) refuse("imatrix must be n_per_row f32");
            j.imatrix.resize((size_t) j.n_per_row);
            memcpy(j.imatrix.data(), w.data(), w.size());
        }
        if (ggml_quantize_requires_imatrix(j.type) && j.imatrix.empty()) {
            refuse(std::string("ggml_quantize_requires_imatrix(") + tn + "): ggml_quantize_chunk needs an importance matrix "
                   "(GGML_ASSERT(imatrix != NULL)); none was given");
        }
        if (!quantize_chunk_supports(j.type)) {
            refuse(std::string("ggml_quantize_chunk has no case for ") + tn + " (it would fail GGML_ASSERT(result == nrows * row_size)); "
                   "try \"ref\":true");
        }
    }
    j.out_bytes = (size_t) j.nrows * ggml_row_size(j.type, j.n_per_row);
    std::vector<uint8_t> raw = read_file(get_string(req, "input"));
    const size_t need = (size_t) (j.nrows * j.n_per_row) * sizeof(float);
    if (raw.size() != need) {
        refuse("input has " + std::to_string(raw.size()) + " bytes, " + std::to_string(j.nrows) + " rows of " +
               std::to_string(j.n_per_row) + " f32 are " + std::to_string(need));
    }
    j.in.resize((size_t) (j.nrows * j.n_per_row));
    if (need) memcpy(j.in.data(), raw.data(), need);
    ggml_quantize_init(j.type);  // IQ grids; a no-op for the other types
    return j;
}

size_t run_quantize(const QuantJob & j, void * dst) {
    if (j.ref) {
        j.ref_fn(j.in.data(), dst, j.nrows * j.n_per_row);
        return j.out_bytes;
    }
    return ggml_quantize_chunk(j.type, j.in.data(), dst, 0, j.nrows, j.n_per_row,
                               j.imatrix.empty() ? nullptr : j.imatrix.data());
}

json op_dequantize(const json & req) {
    check_fields(req, {"op", "id", "type", "input", "output", "n"}, "dequantize");
    const std::string output = get_string(req, "output");
    DequantJob j = prepare_dequantize(req);
    std::vector<float> out((size_t) j.n);
    g_log.clear();
    if (j.n) j.fn(j.in.data(), out.data(), j.n);
    write_file(output, out.data(), out.size() * sizeof(float));
    json r;
    r["ok"] = true;
    r["bytes"] = (uint64_t) (out.size() * sizeof(float));
    return r;
}

json op_quantize(const json & req) {
    check_fields(req, {"op", "id", "type", "input", "output", "nrows", "n_per_row", "ref", "imatrix"}, "quantize");
    const std::string output = get_string(req, "output");
    QuantJob j = prepare_quantize(req);
    std::vector<uint8_t> out(j.out_bytes + 64);
    g_log.clear();
    const size_t got = j.nrows ? run_quantize(j, out.data()) : 0;
    if (got != j.out_bytes) throw std::runtime_error("internal: quantizer returned " + std::to_string(got) + " bytes, expected " + std::to_string(j.out_bytes));
    write_file(output, out.data(), got);
    json r;
    r["ok"] = true;
    r["bytes"] = (uint64_t) got;
    const std::string log = trim_log(g_log);
    if (!log.empty()) r["log"] = log;
    return r;
}

// f(first, end) over [0, units) cut into `threads` even pieces, each on a thread of its own
// (the calling one takes the first).
template <typename F>
void in_pieces(int64_t threads, int64_t units, F f) {
    threads = std::max<int64_t>(1, std::min(threads, units));
    std::vector<std::thread> others;
    for (int64_t t = 1; t < threads; ++t) {
        others.emplace_back(f, units * t / threads, units * (t + 1) / threads);
    }
    f(0, units / threads);
    for (auto & th : others) th.join();
}

json op_bench(const json & req) {
    const std::string what = get_string(req, "what");
    const int64_t reps = get_int(req, "reps", 1, 1000000);
    const int64_t threads = req.contains("threads") ? get_int(req, "threads", 1, 256) : 1;
    std::vector<int64_t> ns;
    ns.reserve((size_t) reps);
    using clk = std::chrono::steady_clock;  // CLOCK_MONOTONIC
    static_assert(clk::is_steady, "steady clock");
    volatile float sink = 0;
    if (what == "dequantize") {
        check_fields(req, {"op", "id", "what", "type", "input", "n", "reps", "threads"}, "bench dequantize");
        DequantJob j = prepare_dequantize(req);
        std::vector<float> out((size_t) j.n + 1);
        const int64_t blck = ggml_blck_size(j.type);
        const size_t bytes = ggml_type_size(j.type);
        for (int64_t k = 0; k < reps; ++k) {
            const auto t0 = clk::now();
            in_pieces(threads, j.n / blck, [&](int64_t a, int64_t b) {
                if (b > a) j.fn(j.in.data() + a * bytes, out.data() + a * blck, (b - a) * blck);
            });
            const auto t1 = clk::now();
            sink = sink + out[(size_t) (k % (j.n ? j.n : 1))];
            ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        }
    } else if (what == "quantize") {
        check_fields(req, {"op", "id", "what", "type", "input", "nrows", "n_per_row", "ref", "reps", "threads"}, "bench quantize");
        QuantJob j = prepare_quantize(req);
        std::vector<uint8_t> out(j.out_bytes + 64);
        const size_t row_size = ggml_row_size(j.type, j.n_per_row);
        for (int64_t k = 0; k < reps; ++k) {
            const auto t0 = clk::now();
            in_pieces(threads, j.nrows, [&](int64_t a, int64_t b) {
                if (b <= a) return;
                if (j.ref) {
                    j.ref_fn(j.in.data() + a * j.n_per_row, out.data() + a * row_size, (b - a) * j.n_per_row);
                } else {
                    ggml_quantize_chunk(j.type, j.in.data(), out.data(), a * j.n_per_row, b - a, j.n_per_row,
                                        j.imatrix.empty() ? nullptr : j.imatrix.data());
                }
            });
            const auto t1 = clk::now();
            sink = sink + out[(size_t) k % out.size()];
            ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        }
    } else {
        refuse("bench: \"what\" must be \"dequantize\" or \"quantize\", got \"" + what + "\"");
    }
    (void) sink;
    json r;
    r["ok"] = true;
    r["ns"] = ns;
    return r;
}

// ---------------------------------------------------------------------------
// dispatch

json handle(const json & req) {
    try {
        if (!req.is_object()) refuse("request must be a JSON object");
        auto it = req.find("op");
        if (it == req.end() || !it->is_string()) refuse("request needs \"op\": capabilities, read, write, types, dequantize, quantize or bench");
        const std::string op = it->get<std::string>();
        json r;
        if (op == "capabilities") r = op_capabilities(req);
        else if (op == "read") r = op_read(req);
        else if (op == "write") r = op_write(req);
        else if (op == "types") r = op_types(req);
        else if (op == "dequantize") r = op_dequantize(req);
        else if (op == "quantize") r = op_quantize(req);
        else if (op == "bench") r = op_bench(req);
        else refuse("unknown op \"" + op + "\" (capabilities, read, write, types, dequantize, quantize, bench)");
        return r;
    } catch (const Refused & e) {
        return error_response(e.what());
    } catch (const std::bad_alloc &) {
        return error_response("adapter: out of memory (std::bad_alloc)");
    } catch (const std::exception & e) {
        return error_response(std::string("adapter: ") + e.what());
    }
}

std::string to_line(const json & r) {
    return r.dump(-1, ' ', false, json::error_handler_t::replace);
}

int g_out_fd = 1;   // the real stdout (fd 1 itself is pointed at stderr)
int g_logfile_fd = -1;
bool g_fork = true;

std::string read_all_fd(int fd) {
    std::string s;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n < 0) { if (errno == EINTR) continue; break; }
        if (n == 0) break;
        s.append(buf, (size_t) n);
    }
    return s;
}

std::string signal_name(int sig) {
    const char * d = strsignal(sig);
    return std::to_string(sig) + (d ? std::string(" (") + d + ")" : std::string());
}

// one request -> one response line (without the newline)
std::string serve_one(const json & req) {
    json id;
    const bool has_id = req.is_object() && req.contains("id");
    if (has_id) id = req["id"];
    auto with_id = [&](json r) {
        if (has_id) r["id"] = id;
        return r;
    };
    if (!g_fork) return to_line(with_id(handle(req)));

    // The IQ grids are computed in this process, once: computed in a child, they would die
    // with it and cost seconds on every request.
    if (req.is_object() && req.value("op", "") == "quantize" && req.contains("type") && req["type"].is_number_unsigned()) {
        const uint64_t t = req["type"].get<uint64_t>();
        if (t < GGML_TYPE_COUNT) ggml_quantize_init((ggml_type) t);
    }

    int p[2];
    if (pipe(p) != 0) return to_line(with_id(error_response(std::string("adapter: pipe failed: ") + strerror(errno))));
    if (g_logfile_fd >= 0) {
        if (ftruncate(g_logfile_fd, 0) != 0) { /* ignore */ }
        lseek(g_logfile_fd, 0, SEEK_SET);
    }
    const pid_t pid = fork();
    if (pid < 0) {
        close(p[0]); close(p[1]);
        return to_line(with_id(error_response(std::string("adapter: fork failed: ") + strerror(errno))));
    }
    if (pid == 0) {
        close(p[0]);
        struct rlimit rl = {0, 0};
        setrlimit(RLIMIT_CORE, &rl);
        g_log_fd = g_logfile_fd;
        const std::string line = to_line(with_id(handle(req)));
        write_all(p[1], line.data(), line.size());
        close(p[1]);
        _exit(0);
    }
    close(p[1]);
    std::string line = read_all_fd(p[0]);
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !line.empty()) return line;

    std::string log;
    if (g_logfile_fd >= 0) {
        struct stat st;
        if (fstat(g_logfile_fd, &st) == 0 && st.st_size > 0) {
            log.resize((size_t) st.st_size);
            const ssize_t n = pread(g_logfile_fd, &log[0], log.size(), 0);
            log.resize(n > 0 ? (size_t) n : 0);
        }
    }
    log = trim_log(log);
    std::string how = WIFSIGNALED(status) ? "killed by signal " + signal_name(WTERMSIG(status))
                                          : "exited with status " + std::to_string(WEXITSTATUS(status));
    json r = error_response((log.empty() ? std::string() : log + "\n") + "(ggml aborted: the request's child process " + how + ")");
    r["aborted"] = true;
    return to_line(with_id(r));
}

void emit(const std::string & line) {
    std::string s = line;
    s.push_back('\n');
    write_all(g_out_fd, s.data(), s.size());
}

int serve() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        json req;
        try {
            req = json::parse(line);
        } catch (const std::exception & e) {
            emit(to_line(error_response(std::string("bad JSON request: ") + e.what())));
            continue;
        }
        emit(serve_one(req));
    }
    return 0;
}

void usage() {
    fprintf(stderr,
            "usage: ggml_peer --serve [--no-fork]   JSON lines on stdin/stdout (see conform/peers/README.md)\n"
            "       ggml_peer [--full] FILE.gguf    read one file, print the response, exit 0 if ok\n"
            "       ggml_peer --types               print the type table\n"
            "       ggml_peer --capabilities        print what this peer reads and writes\n");
}

}  // namespace

int main(int argc, char ** argv) {
    // stdout carries responses only: keep the real stdout on a private fd and
    // send anything else that writes to fd 1 (printf in ggml) to stderr
    g_out_fd = dup(1);
    if (g_out_fd < 0 || dup2(2, 1) < 0) {
        perror("ggml_peer: dup");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    ggml_log_set(log_cb, nullptr);
    ggml_set_abort_callback(abort_cb);

    std::vector<std::string> args(argv + 1, argv + argc);
    bool serve_mode = false, full = false, types = false, caps = false;
    std::string path;
    for (const std::string & a : args) {
        if (a == "--serve") serve_mode = true;
        else if (a == "--no-fork") g_fork = false;
        else if (a == "--full") full = true;
        else if (a == "--types") types = true;
        else if (a == "--capabilities") caps = true;
        else if (a == "-h" || a == "--help") { usage(); return 0; }
        else if (!a.empty() && a[0] == '-') { usage(); return 2; }
        else if (path.empty()) path = a;
        else { usage(); return 2; }
    }
    if (g_fork) {
        FILE * lf = tmpfile();
        if (lf) g_logfile_fd = fileno(lf);
    }
    if (serve_mode) {
        if (!path.empty() || types || caps || full) { usage(); return 2; }
        return serve();
    }
    json req;
    if (types && !caps && path.empty()) req = json{{"op", "types"}};
    else if (caps && !types && !full && path.empty()) req = json{{"op", "capabilities"}};
    else if (!types && !caps && !path.empty()) req = json{{"op", "read"}, {"path", path}, {"full", full}};
    else { usage(); return 2; }
    const std::string line = serve_one(req);
    emit(line);
    return json::parse(line).value("ok", false) ? 0 : 1;
}
