// The per-tensor types llama.cpp's quantizer chooses, from llama.cpp itself
// (llama_quant_compute_types in src/llama-quant.cpp, through src/llama-ext.h): the
// reference the plan of `ggufrw quantize` is checked against.
//
// stdin, one model after another:
//   model ARCH N_EMBD N_FF N_LAYER N_HEAD N_HEAD_KV N_EXPERT
//   tensor NAME NE0 NE1 NE2 NE3          (any number)
//   end
// stdout, per model: for every file type with a default type, one line per tensor that
// llama.cpp lets be quantized, "FTYPE NAME TYPE" (numeric ids), then "done".
// Build: scripts/ggml.sh --tools (links libllama and ggml from the pinned sources).

#include "llama-ext.h"
#include "llama.h"
#include "ggml.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

struct spec {
    std::string name;
    int64_t ne[4];
};

int main() {
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    std::string line;
    std::string arch;
    llama_quant_model_desc desc = {};
    std::vector<spec> specs;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string word;
        in >> word;
        if (word == "model") {
            in >> arch >> desc.n_embd >> desc.n_ff >> desc.n_layer >> desc.n_head >> desc.n_head_kv >> desc.n_expert;
            desc.architecture = arch.c_str();
            desc.n_embd_head_k = desc.n_head ? desc.n_embd / desc.n_head : 0;
            desc.n_embd_head_v = desc.n_embd_head_k;
            specs.clear();
        } else if (word == "tensor") {
            spec s;
            in >> s.name >> s.ne[0] >> s.ne[1] >> s.ne[2] >> s.ne[3];
            specs.push_back(s);
        } else if (word == "end") {
            llama_model * model = llama_quant_model_from_metadata(&desc);
            llama_model_quantize_params params = llama_model_quantize_default_params();
            quantize_state_impl * qs = llama_quant_init(model, &params);
            ggml_init_params ip = { specs.size() * ggml_tensor_overhead() + 1024, nullptr, true };
            ggml_context * ctx = ggml_init(ip);
            std::vector<ggml_tensor *> allowed;
            for (const auto & s : specs) {
                ggml_tensor * t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, s.ne[0], s.ne[1], s.ne[2], s.ne[3]);
                ggml_set_name(t, s.name.c_str());
                if (llama_quant_tensor_allows_quantization(qs, t)) {
                    allowed.push_back(t);
                }
            }
            // in the loader's order (llama_model_loader::weight_name_comparer), as llama.cpp's
            // own test of this function orders them
            std::sort(allowed.begin(), allowed.end(), [](const ggml_tensor * a, const ggml_tensor * b) {
                int la = -1, lb = -1;
                sscanf(a->name, "blk.%d.", &la);
                sscanf(b->name, "blk.%d.", &lb);
                return la != lb ? la < lb : strcmp(a->name, b->name) < 0;
            });
            for (int ft = 0; ft < LLAMA_FTYPE_GUESSED; ft++) {
                if (llama_ftype_get_default_type((llama_ftype) ft) == GGML_TYPE_COUNT) {
                    continue;
                }
                std::vector<ggml_type> types(allowed.size());
                try {
                    llama_quant_compute_types(qs, (llama_ftype) ft, allowed.data(), types.data(), allowed.size());
                } catch (const std::exception & e) {
                    printf("%d ! %s\n", ft, e.what());
                    continue;
                }
                for (size_t i = 0; i < allowed.size(); i++) {
                    printf("%d %s %d\n", ft, ggml_get_name(allowed[i]), (int) types[i]);
                }
            }
            printf("done\n");
            fflush(stdout);
            ggml_free(ctx);
            llama_quant_free(qs);
            llama_model_free(model);
        }
    }
    return 0;
}
