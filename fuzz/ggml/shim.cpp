// The fuzz targets' window on ggml's own code (linked from the pinned llama.cpp sources that
// scripts/ggml.sh builds): its header reader as llama.cpp's loader calls it, and its
// dequantizers. Built by fuzz/build.rs with the `ggml` feature only.
//
// The reader's result is handed back as text, one item a line, in the form
// fuzz/src/ggml.rs writes for ggufrw's reading of the same bytes, so that the two compare as
// strings. Strings are hex of the bytes up to the first NUL (ggml hands out C strings);
// numbers, bools and numeric arrays are hex of their stored bytes.

#include "ggml.h"
#include "gguf.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

// ggml-quants.h (internal): Q8_K has no to_float in the type traits.
extern "C" void dequantize_row_q8_K(const void * x, float * y, int64_t k);

namespace {

void quiet(enum ggml_log_level, const char *, void *) {}

void hex(std::string & out, const void * p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    const auto * b = static_cast<const uint8_t *>(p);
    for (size_t i = 0; i < n; ++i) {
        out += digits[b[i] >> 4];
        out += digits[b[i] & 15];
    }
}

void hex_str(std::string & out, const char * s) { hex(out, s, strlen(s)); }

size_t value_size(enum gguf_type t) {
    switch (t) {
        case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
        case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
        case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
        case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
        default: return 0;
    }
}

std::string describe(const struct gguf_context * g) {
    std::string out;
    out += "version " + std::to_string(gguf_get_version(g)) + "\n";
    out += "alignment " + std::to_string(gguf_get_alignment(g)) + "\n";
    out += "data_offset " + std::to_string(gguf_get_data_offset(g)) + "\n";
    const int64_t n_kv = gguf_get_n_kv(g);
    for (int64_t i = 0; i < n_kv; ++i) {
        out += "kv ";
        hex_str(out, gguf_get_key(g, i));
        const enum gguf_type t = gguf_get_kv_type(g, i);
        out += " " + std::to_string((int) t) + " ";
        if (t == GGUF_TYPE_STRING) {
            hex_str(out, gguf_get_val_str(g, i));
        } else if (t == GGUF_TYPE_ARRAY) {
            const enum gguf_type et = gguf_get_arr_type(g, i);
            const size_t n = gguf_get_arr_n(g, i);
            out += std::to_string((int) et) + " " + std::to_string(n) + " ";
            if (et == GGUF_TYPE_STRING) {
                for (size_t k = 0; k < n; ++k) {
                    if (k) out += ",";
                    hex_str(out, gguf_get_arr_str(g, i, k));
                }
            } else if (n) {
                hex(out, gguf_get_arr_data(g, i), n * value_size(et));
            }
        } else {
            hex(out, gguf_get_val_data(g, i), value_size(t));
        }
        out += "\n";
    }
    const int64_t n_t = gguf_get_n_tensors(g);
    for (int64_t i = 0; i < n_t; ++i) {
        out += "tensor ";
        hex_str(out, gguf_get_tensor_name(g, i));
        const int64_t * ne = gguf_get_tensor_ne(g, i);
        out += " " + std::to_string((int) gguf_get_tensor_type(g, i));
        for (int d = 0; d < GGML_MAX_DIMS; ++d) out += " " + std::to_string(ne[d]);
        out += " " + std::to_string(gguf_get_tensor_offset(g, i));
        out += " " + std::to_string(gguf_get_tensor_size(g, i)) + "\n";
    }
    return out;
}

}  // namespace

extern "C" {

// Reads `data` as gguf_init_from_file does (the same reader over a FILE *), with a ggml
// context as llama.cpp's loader asks for one; `full` also loads the tensor data. Returns 1 and
// calls `put` with the description when ggml accepts, 0 when it refuses.
int ggufrw_ggml_read(const uint8_t * data, size_t len, int full,
                     void (*put)(void * user, const char * text, size_t n), void * user) {
    ggml_log_set(quiet, nullptr);
    // fmemopen refuses a zero-length buffer; an empty file is one ggml refuses anyway.
    static const uint8_t nothing[1] = {0};
    FILE * f = fmemopen(const_cast<uint8_t *>(len ? data : nothing), len ? len : 1, "rb");
    if (!f) return -1;
    if (!len) {
        // Seek to the end of the one byte: the reader sees an empty file.
        fseek(f, 1, SEEK_SET);
    }
    struct ggml_context * tensors = nullptr;
    struct gguf_init_params params = {/*no_alloc =*/ !full, /*ctx =*/ &tensors};
    struct gguf_context * g = gguf_init_from_file_ptr(f, params);
    fclose(f);
    if (!g) return 0;
    const std::string text = describe(g);
    put(user, text.data(), text.size());
    if (tensors) ggml_free(tensors);
    gguf_free(g);
    return 1;
}

// ggml's to_float for `type` over `n` elements of whole blocks; 0 if it has none.
int ggufrw_ggml_dequantize(int type, const void * blocks, float * out, int64_t n) {
    if (type < 0 || type >= GGML_TYPE_COUNT) return 0;
    ggml_to_float_t f = ggml_get_type_traits((enum ggml_type) type)->to_float;
    if (!f && type == GGML_TYPE_Q8_K) f = dequantize_row_q8_K;
    if (!f) return 0;
    f(blocks, out, n);
    return 1;
}

}  // extern "C"
