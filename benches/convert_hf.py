#!/usr/bin/env python3
"""`ggufrw convert-hf` against the reference, llama.cpp's `convert_hf_to_gguf.py`.

Usage: benches/convert_hf.py [--pairs 3] [--exe BUILD/ggufrw] [--only f16,q8_0,Q4_K_M]
                             [--model llama-bf16|deepseek-fp8|qwen25vl-bf16|granite4h-bf16]
                             [--layers N]

Needs the reference's environment (`scripts/convert-ref.sh`: torch and transformers) and, for
the Q4_K_M row, llama-quantize (`scripts/ggml.sh --tools`). Makes (once, cached under
~/.cache/ggufrw/bench-convert-hf) a ~1 GB bf16 Llama checkpoint with transformers' own class
(random weights, 0.49 B parameters), then for each row runs ours and the reference in turn,
A B A B…, each as a whole process under /usr/bin/time, and prints the median wall time and
peak RSS of each and the median of the per-pair ratios (ours / reference) with their spread:
- f16, q8_0: `ggufrw convert-hf DIR --outtype T` against `convert_hf_to_gguf.py DIR --outtype T`
  (the outputs are compared byte for byte after each pair);
- Q4_K_M: `ggufrw convert-hf DIR --quantize Q4_K_M` against the two official steps,
  `convert_hf_to_gguf.py DIR --outtype bf16` then `llama-quantize OUT Q4_K_M`.
The page cache is warm (the checkpoint is read once before the first pair).

`--model deepseek-fp8` uses instead a DeepSeek-V3 mixture of experts published as FP8 in
128×128 blocks with float32 `weight_scale_inv` (DeepSeek's own form): transformers' class with
random weights, quantized as tests/convert_hf/reference.py quantizes its fixtures, 64 experts of
1024×512 per layer, `--layers` layers (9: ~1 GB, 0.99 B parameters; the first dense), the
tokenizer of the DeepSeek fixture. Its rows compare the same commands on it; two `--layers`
show how peak memory follows the largest layer, not the model.

`--model qwen25vl-bf16` uses a ~1 GB bf16 Qwen2.5-VL (transformers' class, random weights: a
12-block vision tower of width 1024 beside a 6-layer text model of width 1024 and the Qwen 2
vocabulary of the Qwen2.5-VL fixture, which needs `scripts/convert-tf5.sh` in
GGUFRW_TF5_PYTHON), and its row `with-mmproj`: `ggufrw convert-hf DIR --with-mmproj --outtype
f16` against the reference's two runs, `convert_hf_to_gguf.py DIR --outtype f16` and the same
with `--mmproj` (both outputs compared byte for byte).

`--model granite4h-bf16` uses a ~0.8 GB bf16 Granite 4.0-H (transformers' GraniteMoeHybrid class,
random weights): a hybrid of Mamba-2 and attention layers (three Mamba-2 layers to one
attention layer, `--layers` layers, 16 by default), width 1024, a dense shared MLP, the GPT-2
vocabulary of the Granite 4 fixture; its rows as the Llama's.
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.expanduser("~/.cache/ggufrw/bench-convert-hf")
MODEL = os.path.join(CACHE, "Bench-Llama-0.5B")

MAKE = r'''
import sys, torch, sentencepiece as spm, io
from pathlib import Path
from transformers import LlamaConfig, LlamaTokenizer, AutoModelForCausalLM
out, corpus = Path(sys.argv[1]), Path(sys.argv[2])
lines = [l for l in corpus.read_text(encoding="utf-8").splitlines() if l.strip()]
buf = io.BytesIO()
spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf, vocab_size=320,
                               model_type="bpe", num_threads=1, minloglevel=2)
out.mkdir(parents=True, exist_ok=True)
(out / "tokenizer.model").write_bytes(buf.getvalue())
tok = LlamaTokenizer(vocab_file=str(out / "tokenizer.model"), legacy=True)
tok.save_pretrained(str(out))
cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
                  num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=2048)
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
model.save_pretrained(str(out), safe_serialization=True, max_shard_size="400MB")
(out / ".complete").write_text("")
'''


MAKE_FP8 = r'''
import json, shutil, sys, torch
from pathlib import Path
root, out, layers, work, tree = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
sys.path.insert(0, root + "/tests/convert_hf")
import reference
reference.LLAMA_CPP = tree
from transformers import AutoConfig, AutoModelForCausalLM
fx = next(f for f in reference.FIXTURES if f.name == "DeepSeek-V3-Tiny-FP8")
tiny = reference.ensure_fixtures(work, [fx])[fx.name]
cfg = AutoConfig.from_pretrained(str(tiny))
del cfg.quantization_config
cfg.update(dict(hidden_size=1024, intermediate_size=2816, moe_intermediate_size=512,
                n_routed_experts=64, n_shared_experts=1, num_experts_per_tok=4,
                first_k_dense_replace=1, num_hidden_layers=layers, num_attention_heads=16,
                num_key_value_heads=16, kv_lora_rank=256, q_lora_rank=384, qk_nope_head_dim=64,
                qk_rope_head_dim=32, v_head_dim=64, head_dim=32, n_group=4, topk_group=2,
                max_position_embeddings=4096))
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
model.save_pretrained(str(out), safe_serialization=True, max_shard_size="400MB")
del model
for f in tiny.iterdir():
    if f.name.startswith("tokenizer") or f.name == "special_tokens_map.json":
        shutil.copy(f, out / f.name)
reference.as_quantized(out, "fp8-block-128")
(out / ".complete").write_text("")
'''


MAKE_VL = r'''
import json, shutil, sys, torch
from pathlib import Path
root, out, work, tree = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
sys.path.insert(0, root + "/tests/convert_hf")
import reference
reference.LLAMA_CPP = tree
from transformers import AutoConfig, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
fx = next(f for f in reference.FIXTURES if f.name == "Qwen2.5-VL-Tiny-3B-Instruct")
tiny = reference.ensure_fixtures(work, [fx])[fx.name]
vocab = AutoConfig.from_pretrained(str(tiny)).to_dict()["text_config"]["vocab_size"]
text = dict(vocab_size=vocab, hidden_size=1024, intermediate_size=2816, num_hidden_layers=6,
            num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096,
            rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]}, tie_word_embeddings=False)
vision = dict(depth=12, hidden_size=1024, intermediate_size=2816, num_heads=16, out_hidden_size=1024,
              fullatt_block_indexes=[3, 7, 11])
cfg = Qwen2_5_VLConfig(text_config=text, vision_config=vision, **text)
torch.manual_seed(0)
model = Qwen2_5_VLForConditionalGeneration(cfg).to(torch.bfloat16)
model.save_pretrained(str(out), safe_serialization=True, max_shard_size="400MB")
del model
# the class at the top level, as the Hub's config has it (this transformers files it under
# text_config for a model built from a config)
path = out / "config.json"
config = json.loads(path.read_text(encoding="utf-8"))
config = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], **config}
path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
for f in tiny.iterdir():
    if f.name.startswith(("tokenizer", "special_tokens", "vocab", "merges", "preprocessor", "chat_template")):
        shutil.copy(f, out / f.name)
(out / ".complete").write_text("")
'''


MAKE_HYBRID = r'''
import shutil, sys, torch
from pathlib import Path
root, out, layers, work, tree = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
sys.path.insert(0, root + "/tests/convert_hf")
import reference
reference.LLAMA_CPP = tree
from transformers import AutoConfig, AutoModelForCausalLM, GraniteMoeHybridConfig
fx = next(f for f in reference.FIXTURES if f.name == "granite-4.0-tiny-h-preview")
tiny = reference.ensure_fixtures(work, [fx])[fx.name]
vocab = AutoConfig.from_pretrained(str(tiny)).vocab_size
kinds = ["mamba", "mamba", "mamba", "attention"]
cfg = GraniteMoeHybridConfig(
    vocab_size=vocab, hidden_size=1024, intermediate_size=512, shared_intermediate_size=4096,
    num_hidden_layers=layers, num_attention_heads=16, num_key_value_heads=4,
    layer_types=[kinds[i % 4] for i in range(layers)], num_local_experts=0, num_experts_per_tok=0,
    mamba_n_heads=32, mamba_d_head=64, mamba_n_groups=1, mamba_d_state=128, mamba_expand=2,
    mamba_chunk_size=256, max_position_embeddings=4096, position_embedding_type="nope",
    tie_word_embeddings=False)
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
model.save_pretrained(str(out), safe_serialization=True, max_shard_size="400MB")
del model
for f in tiny.iterdir():
    if f.name.startswith(("tokenizer", "special_tokens", "vocab", "merges")):
        shutil.copy(f, out / f.name)
(out / ".complete").write_text("")
'''


def lines_of(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()


def timed(cmds, cwd):
    """Runs each command in turn under /usr/bin/time; returns (wall seconds, peak KiB)."""
    wall, peak = 0.0, 0
    for cmd in cmds:
        r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, cwd=cwd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
        e, m = r.stderr.strip().splitlines()[-1].split()
        wall += float(e)
        peak = max(peak, int(m))
    return wall, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--exe")
    ap.add_argument("--only", default="f16,q8_0,Q4_K_M")
    ap.add_argument("--model", default="llama-bf16", choices=["llama-bf16", "deepseek-fp8", "qwen25vl-bf16",
                                                                 "granite4h-bf16"])
    ap.add_argument("--layers", type=int)
    a = ap.parse_args()
    model = MODEL
    if a.model == "deepseek-fp8":
        a.layers = a.layers or 9
        model = os.path.join(CACHE, f"Bench-DeepSeek-V3-FP8-{a.layers}L")
    if a.model == "granite4h-bf16":
        a.layers = a.layers or 16
        model = os.path.join(CACHE, f"Bench-Granite-4.0-H-{a.layers}L")
    if a.model == "qwen25vl-bf16":
        model = os.path.join(CACHE, "Bench-Qwen2.5-VL-0.5B")
        if a.only == ap.get_default("only"):
            a.only = "with-mmproj"
    py, tree = lines_of([os.path.join(ROOT, "scripts/convert-ref.sh")])[:2]
    exe = os.path.abspath(a.exe) if a.exe else None
    if exe is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "ggufrw-cli"], cwd=ROOT, check=True)
        exe = os.path.join(ROOT, "target/release/ggufrw")
    if not os.path.exists(os.path.join(model, ".complete")):
        print("making the checkpoint (once)…", file=sys.stderr)
        if a.model == "qwen25vl-bf16":
            shutil.rmtree(model, ignore_errors=True)
            subprocess.run([py, "-c", MAKE_VL, ROOT, model, os.path.join(CACHE, "fixtures"), tree], check=True)
        elif a.model == "granite4h-bf16":
            shutil.rmtree(model, ignore_errors=True)
            subprocess.run([py, "-c", MAKE_HYBRID, ROOT, model, str(a.layers), os.path.join(CACHE, "fixtures"),
                            tree], check=True)
        elif a.model == "deepseek-fp8":
            shutil.rmtree(model, ignore_errors=True)
            subprocess.run([py, "-c", MAKE_FP8, ROOT, model, str(a.layers), os.path.join(CACHE, "fixtures"), tree],
                           check=True)
        else:
            subprocess.run([py, "-c", MAKE, model, os.path.join(ROOT, "tests/convert_hf/corpus.txt")], check=True)
    files = [os.path.join(model, f) for f in os.listdir(model) if os.path.isfile(os.path.join(model, f))]
    size = sum(os.path.getsize(f) for f in files)
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass
    ref = [py, os.path.join(tree, "convert_hf_to_gguf.py"), model]
    rows = a.only.split(",")
    quantize = None
    if "Q4_K_M" in rows:
        try:
            tools = lines_of([os.path.join(ROOT, "scripts/ggml.sh"), "--tools"])[-1]
            quantize = os.path.join(tools, "llama-quantize")
        except subprocess.CalledProcessError:
            print("Q4_K_M: skipped, llama-quantize could not be built", file=sys.stderr)
            rows.remove("Q4_K_M")
    kind = "FP8 in blocks" if a.model == "deepseek-fp8" else "bf16"
    print(f"checkpoint: {model} ({size / 1e9:.2f} GB {kind}), {a.pairs} pairs, warm page cache")
    print(f"{'row':8} {'ours s':>8} {'ref s':>8} {'wall ratio [spread]':>24} {'ours MiB':>9} {'ref MiB':>9} {'RSS ratio':>10}")
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        for row in rows:
            ours_w, ref_w, ours_m, ref_m, ratios = [], [], [], [], []
            for _ in range(a.pairs):
                pairs = [("ours.gguf", "ref.gguf")]
                if row == "with-mmproj":
                    os.mkdir(os.path.join(work, "ours"))
                    ours = [[exe, "convert-hf", model, "--with-mmproj", "--outtype", "f16", "-o", "ours"]]
                    theirs = [ref + ["--outtype", "f16", "--outfile", "ref.gguf"],
                              ref + ["--mmproj", "--outtype", "f16", "--outfile", "ref-mmproj.gguf"]]
                elif row == "Q4_K_M":
                    ours = [[exe, "convert-hf", model, "-o", "ours.gguf", "--quantize", "Q4_K_M"]]
                    theirs = [ref + ["--outtype", "bf16", "--outfile", "mid.gguf"],
                              [quantize, "mid.gguf", "ref.gguf", "Q4_K_M"]]
                else:
                    ours = [[exe, "convert-hf", model, "--outtype", row, "-o", "ours.gguf"]]
                    theirs = [ref + ["--outtype", row, "--outfile", "ref.gguf"]]
                w1, m1 = timed(ours, work)
                w2, m2 = timed(theirs, work)
                if row == "with-mmproj":
                    names = os.listdir(os.path.join(work, "ours"))
                    projector = [n for n in names if n.startswith("mmproj-")]
                    text = [n for n in names if not n.startswith("mmproj-")]
                    if len(projector) != 1 or len(text) != 1:
                        sys.exit(f"{row}: {names}, not a text file and a projector")
                    pairs = [(os.path.join("ours", text[0]), "ref.gguf"),
                             (os.path.join("ours", projector[0]), "ref-mmproj.gguf")]
                for mine, theirs_out in pairs:
                    same = subprocess.run(["cmp", "-s", mine, theirs_out], cwd=work).returncode == 0
                    if not same:
                        sys.exit(f"{row}: {mine} and {theirs_out} differ")
                ours_w.append(w1); ref_w.append(w2); ours_m.append(m1); ref_m.append(m2)
                ratios.append(w1 / w2)
                for f in os.listdir(work):
                    shutil.rmtree(os.path.join(work, f)) if os.path.isdir(os.path.join(work, f)) \
                        else os.remove(os.path.join(work, f))
            med = statistics.median
            print(f"{row:8} {med(ours_w):8.2f} {med(ref_w):8.2f} {med(ratios):10.3f} [{min(ratios):.3f}–{max(ratios):.3f}]"
                  f" {med(ours_m) / 1024:9.0f} {med(ref_m) / 1024:9.0f} {med(ours_m) / med(ref_m):10.3f}")


if __name__ == "__main__":
    main()
