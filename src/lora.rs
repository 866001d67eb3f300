//! LoRA adapters merged into their base model, byte for byte as llama.cpp's
//! `llama-export-lora` (built from the pinned tree, AVX2 and FMA, llamafile's sgemm) merges
//! them: each adapted weight becomes `W + Σ scale · B·A`, computed in f32 in the reference's
//! order of operations, and is written F32 where the base's is F32, else F16; every other
//! tensor is copied as it is.
//!
//! The reference computes `B·A` with ggml's `mul_mat`: llamafile's tinyBLAS where the rank is
//! a multiple of 8 (and the rows a multiple of 4, more than one column), else ggml's
//! `vec_dot_f32`. Each sums the rank's products in its own order of fused multiply-adds and
//! lane additions, which this module reproduces; `f32::mul_add` is the
//! one correctly rounded fused multiply-add, in hardware where the processor has it.

use crate::fsutil::{Mode, Progress};
use crate::{Builder, ByteOrder, GgmlType, Gguf, KeyValue, Source, Value};
use std::path::{Path, PathBuf};

/// An adapter to merge and the scale its product is multiplied by (`--lora`: 1;
/// `--lora-scaled FILE:SCALE`).
#[derive(Clone, Debug)]
pub struct Adapter {
    /// The GGUF adapter (`general.type = adapter`, `adapter.type = lora`).
    pub path: PathBuf,
    /// The user's scale.
    pub scale: f32,
}

/// What a merge wrote.
#[derive(Debug)]
pub struct MergeReport {
    /// Tensors merged with the adapters.
    pub merged: usize,
    /// Tensors written (merged and copied).
    pub tensors: usize,
    /// Adapter tensors no base tensor takes (an `lm_head` adapter on a base that ties its
    /// output to the embeddings): the reference ignores them silently.
    pub ignored: Vec<String>,
}

/// Why a merge failed.
#[derive(Debug, thiserror::Error)]
pub enum LoraError {
    /// A file could not be read, or is not a GGUF file.
    #[error(transparent)]
    Gguf(#[from] crate::Error),
    /// An input is not what the merge takes (the reference's own refusals among them).
    #[error("{}: {message}", path.display())]
    Input {
        /// The file to blame.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn input(path: &Path, message: impl Into<String>) -> LoraError {
    LoraError::Input {
        path: path.to_owned(),
        message: message.into(),
    }
}

fn string<'a>(g: &'a Gguf<memmap2::Mmap>, key: &str) -> &'a str {
    match g.get(key) {
        Some(Value::String(s)) => s.as_str().unwrap_or(""),
        _ => "",
    }
}

struct Loaded {
    path: PathBuf,
    file: Gguf<memmap2::Mmap>,
    scale: f32,
    alpha: f32,
}

impl Loaded {
    fn tensor(&self, name: &str) -> Option<crate::Tensor<'_>> {
        self.file.tensor(name)
    }
}

/// Merges `adapters` into `base` and writes the result to `out` (temporary file, then
/// rename): what `llama-export-lora -m BASE --lora A ... -o OUT -t THREADS` writes. `threads`:
/// 0 for every processor; the bytes are the same for every count.
pub fn export_lora(
    base: &Path,
    adapters: &[Adapter],
    out: &Path,
    threads: usize,
    progress: &dyn Progress,
) -> Result<MergeReport, LoraError> {
    let file = Gguf::open(base)?;
    if file.get("split.count").is_some() {
        return Err(input(base, "split model is not yet supported"));
    }
    check_layout(&file, base)?;
    let arch = string(&file, "general.architecture").to_owned();
    let mut loaded = Vec::with_capacity(adapters.len());
    for a in adapters {
        let g = Gguf::open(&a.path)?;
        check_layout(&g, &a.path)?;
        let general_type = string(&g, "general.type");
        if general_type != "adapter" {
            return Err(input(
                &a.path,
                format!("expect general.type to be 'adapter', but got: {general_type}"),
            ));
        }
        let adapter_type = string(&g, "adapter.type");
        if adapter_type != "lora" {
            return Err(input(
                &a.path,
                format!("expect adapter.type to be 'lora', but got: {adapter_type}"),
            ));
        }
        let lora_arch = string(&g, "general.architecture");
        if lora_arch != arch {
            return Err(input(
                &a.path,
                format!("model arch and LoRA arch mismatch ({arch} and {lora_arch})"),
            ));
        }
        let alpha = match g.get("adapter.lora.alpha") {
            Some(Value::Float32(v)) => *v,
            _ => 0.0,
        };
        loaded.push(Loaded {
            path: a.path.clone(),
            file: g,
            scale: a.scale,
            alpha,
        });
    }
    if let Some((first, rest)) = loaded.split_first() {
        for other in rest {
            let same = other.file.header().tensor_infos.len()
                == first.file.header().tensor_infos.len()
                && other
                    .file
                    .tensors()
                    .all(|t| first.file.tensor(t.name().as_bytes()).is_some());
            if !same {
                return Err(input(
                    &other.path,
                    "Input adapters do not have the same list of tensors. This is not yet \
                     supported. Please merge the adapter one-by-one instead of merging all at \
                     once.",
                ));
            }
        }
    }

    // the reference's `std::map`: by name, byte by byte
    let mut order: Vec<crate::Tensor<'_>> = file.tensors().collect();
    order.sort_by(|a, b| a.name().as_bytes().cmp(b.name().as_bytes()));
    let mut plan = Vec::with_capacity(order.len());
    for t in &order {
        let name = t.name().to_string();
        let have = |suffix: &str| {
            loaded
                .iter()
                .all(|a| a.tensor(&format!("{name}{suffix}")).is_some())
        };
        let (has_a, has_b) = (have(".lora_a"), have(".lora_b"));
        match (has_a, has_b) {
            (false, false) => plan.push((t, None)),
            (true, true) => {
                let ty = t.ggml_type.ok_or_else(|| {
                    input(base, format!("{name}: unknown type {}", t.info.ggml_type))
                })?;
                let out_type = match ty {
                    GgmlType::F32 => GgmlType::F32,
                    _ => GgmlType::F16,
                };
                let pairs = loaded
                    .iter()
                    .map(|a| factors(a, &name, &t.info.dimensions))
                    .collect::<Result<Vec<_>, _>>()?;
                plan.push((t, Some((ty, out_type, pairs))));
            }
            _ => {
                return Err(input(
                    base,
                    format!("tensor {name} missing either lora_a or lora_b"),
                ))
            }
        }
    }
    let mut ignored = Vec::new();
    if let Some(first) = loaded.first() {
        for t in first.file.tensors() {
            let name = t.name().to_string();
            let stem = name
                .strip_suffix(".lora_a")
                .or_else(|| name.strip_suffix(".lora_b"));
            if stem.is_none_or(|s| file.tensor(s).is_none()) {
                ignored.push(name);
            }
        }
    }

    let mut metadata: Vec<KeyValue> = file.header().metadata.clone();
    crate::quantize::gguf_set_val(&mut metadata, "general.file_type", Value::Uint32(1));
    let threads = crate::quant::thread_count(threads);
    let mut builder = Builder::new().with_metadata(metadata);
    for (t, merge) in &plan {
        let dims = trimmed(&t.info.dimensions);
        builder = match merge {
            None => builder.tensor(
                t.name().to_string(),
                t.ggml_type.unwrap_or(GgmlType::F32),
                &dims,
                Source::Bytes(file.tensor_data(t.index)?),
            )?,
            Some((ty, out_type, pairs)) => {
                let len = out_type
                    .byte_size(&dims)
                    .map_err(|e| input(base, e.to_string()))?;
                let (file, t, ty, out_type) = (&file, *t, *ty, *out_type);
                let job = move || merge_tensor(file, t, ty, out_type, pairs, threads);
                builder.tensor(
                    t.name().to_string(),
                    out_type,
                    &dims,
                    Source::Chunks {
                        chunks: Box::new(std::iter::once_with(job)),
                        len,
                    },
                )?
            }
        };
    }
    builder.write_file_with(out, Mode::Plain, progress)?;
    Ok(MergeReport {
        merged: plan.iter().filter(|(_, merge)| merge.is_some()).count(),
        tensors: plan.len(),
        ignored,
    })
}

/// A base the reference writes wrongly is refused: big-endian (it writes little-endian
/// headers with the base's bytes), or aligned otherwise than to 32 bytes (it copies the key
/// and pads to 32).
fn check_layout(g: &Gguf<memmap2::Mmap>, path: &Path) -> Result<(), LoraError> {
    if g.header().byte_order != ByteOrder::Little {
        return Err(input(path, "a big-endian file is not merged"));
    }
    match g.get(crate::ALIGNMENT_KEY) {
        None | Some(Value::Uint32(32)) => Ok(()),
        Some(v) => Err(input(
            path,
            format!(
                "{} = {v:?}: the merge pads to 32 bytes; a file aligned otherwise is not merged",
                crate::ALIGNMENT_KEY
            ),
        )),
    }
}

/// `ggml_n_dims`: trailing axes of one dropped, at least one kept.
fn trimmed(dims: &[u64]) -> Vec<u64> {
    let n = dims.iter().rposition(|&d| d != 1).map_or(1, |i| i + 1);
    dims[..n.max(1)].to_vec()
}

/// One adapter's factors of a weight of `dims`, checked.
struct Factors<'a> {
    map: &'a memmap2::Mmap,
    a: &'a [u8],
    a_type: GgmlType,
    b: &'a [u8],
    b_type: GgmlType,
    rank: usize,
    scale: f32,
}

fn factors<'a>(adapter: &'a Loaded, name: &str, dims: &[u64]) -> Result<Factors<'a>, LoraError> {
    let ta = adapter.tensor(&format!("{name}.lora_a")).expect("checked");
    let tb = adapter.tensor(&format!("{name}.lora_b")).expect("checked");
    let (a_type, b_type) = match (ta.ggml_type, tb.ggml_type) {
        (Some(a), Some(b)) if !a.is_quantized() && !b.is_quantized() => (a, b),
        _ => {
            return Err(input(
                &adapter.path,
                "quantized LoRA adapters is not supported, please retry with f16 or f32",
            ))
        }
    };
    let (da, db) = (&ta.info.dimensions, &tb.info.dimensions);
    let get = |d: &[u64], i: usize| d.get(i).copied().unwrap_or(1);
    let rank = get(db, 0);
    let embd = name.starts_with("token_embd");
    // `mul_mat(Aᵀ, B)`, or for the embeddings `mul_mat(B, A)` (their `lora_a` is stored
    // transposed): the product's shape must be the weight's
    let fits = match embd {
        false => get(da, 0) == get(dims, 0) && get(da, 1) == rank && get(db, 1) == get(dims, 1),
        true => get(da, 0) == rank && get(db, 1) == get(dims, 0) && get(da, 1) == get(dims, 1),
    } && (2..4).all(|i| get(da, i) == get(dims, i) && get(db, i) == get(dims, i));
    if !fits || rank == 0 {
        return Err(input(
            &adapter.path,
            format!("{name}: lora_a {da:?} and lora_b {db:?} do not make the base's {dims:?}"),
        ));
    }
    let rank_f = rank as f32;
    let scale = match adapter.alpha {
        0.0 => adapter.scale,
        alpha => adapter.scale * alpha / rank_f,
    };
    Ok(Factors {
        map: adapter.file.storage(),
        a: adapter.file.tensor_data(ta.index)?,
        a_type,
        b: adapter.file.tensor_data(tb.index)?,
        b_type,
        rank: rank as usize,
        scale,
    })
}

fn to_f32(ty: GgmlType, bytes: &[u8], n: usize) -> crate::Result<Vec<f32>> {
    let mut out = vec![0f32; n];
    crate::quant::dequantize(ty, bytes, ByteOrder::Little, &mut out)?;
    Ok(out)
}

/// The merged tensor's bytes.
fn merge_tensor(
    file: &Gguf<memmap2::Mmap>,
    t: &crate::Tensor<'_>,
    ty: GgmlType,
    out_type: GgmlType,
    pairs: &[Factors<'_>],
    threads: usize,
) -> crate::Result<Vec<u8>> {
    let dims = &t.info.dimensions;
    let get = |i: usize| dims.get(i).copied().unwrap_or(1) as usize;
    let (ne0, ne1) = (get(0), get(1));
    let batches = get(2) * get(3);
    let stored = file.tensor_data(t.index)?;
    let mut cur = to_f32(ty, stored, ne0 * ne1 * batches)?;
    // read once: the pages go back (a merge's memory stays at a tensor's, not the model's)
    crate::view::release(file.storage(), stored);
    let embd = t.name().as_bytes().starts_with(b"token_embd");
    for f in pairs {
        let r = f.rank;
        let (na, nb) = match embd {
            false => (ne0 * r, r * ne1),
            true => (r * ne1, r * ne0),
        };
        let a = to_f32(f.a_type, f.a, na * batches)?;
        let b = to_f32(f.b_type, f.b, nb * batches)?;
        crate::view::release(f.map, f.a);
        crate::view::release(f.map, f.b);
        for batch in 0..batches {
            let (a, b) = (&a[batch * na..][..na], &b[batch * nb..][..nb]);
            // `xs`: the rows of mul_mat's first operand (m of them), `ys`: its second's (n)
            let (xs, ys) = match embd {
                true => (b.to_vec(), a),
                // `ggml_cont(ggml_transpose(A))`: A's columns as rows
                false => {
                    let mut at = vec![0f32; na];
                    for (l, row) in a.chunks_exact(ne0).enumerate() {
                        for (i, v) in row.iter().enumerate() {
                            at[i * r + l] = *v;
                        }
                    }
                    (at, b)
                }
            };
            let (m, n) = (ne0, ne1);
            let product = Product {
                xs: &xs,
                ys,
                k: r,
                m,
                tiny: n >= 2 && r % 8 == 0 && m % 4 == 0,
                scale: f.scale,
            };
            accumulate(product, &mut cur[batch * m * n..][..m * n], threads);
        }
    }
    Ok(match out_type {
        GgmlType::F32 => cur.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => crate::quant::quantize(GgmlType::F16, &cur, ne0)?,
    })
}

/// `B·A` as `mul_mat` makes it, added to a weight: `out[j·m + i] += scale · dot(xs[i], ys[j])`
/// (the dot product rounded, scaled, then added), each dot product of `k` elements in
/// tinyBLAS's order (`tiny`) or `vec_dot_f32`'s.
#[derive(Clone, Copy)]
struct Product<'a> {
    xs: &'a [f32],
    ys: &'a [f32],
    k: usize,
    m: usize,
    tiny: bool,
    scale: f32,
}

/// The product added to `out`, its rows split between `threads`.
fn accumulate(p: Product<'_>, out: &mut [f32], threads: usize) {
    let rows = out.len() / p.m.max(1);
    let per = rows.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        for (c, chunk) in out.chunks_mut(per * p.m).enumerate() {
            let part = Product {
                ys: &p.ys[c * per * p.k..],
                ..p
            };
            s.spawn(move || rows_fma(part, chunk));
        }
    });
}

fn rows_fma(p: Product<'_>, out: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
    {
        #[target_feature(enable = "avx2,fma")]
        fn fma(p: Product<'_>, out: &mut [f32]) {
            rows(p, out);
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the processor has AVX2 and FMA (asked just above).
            return unsafe { fma(p, out) };
        }
    }
    rows(p, out);
}

#[inline(always)]
fn rows(p: Product<'_>, out: &mut [f32]) {
    let (k, m) = (p.k, p.m);
    if p.tiny {
        // tinyBLAS's own sums, four of `xs` by three of `ys` at a time (loads shared)
        let n = out.len() / m;
        let mut j = 0;
        while j < n {
            let left = n - j;
            let (ys, out) = (&p.ys[j * k..], &mut out[j * m..]);
            let p = Product { ys, ..p };
            match left {
                1 => tile::<1>(p, out),
                2 => tile::<2>(p, out),
                _ => tile::<3>(p, out),
            }
            j += left.min(3);
        }
        return;
    }
    for (row, y) in out.chunks_exact_mut(m).zip(p.ys.chunks_exact(k)) {
        for (o, x) in row.iter_mut().zip(p.xs.chunks_exact(k)) {
            *o += dot_ggml(x, y) * p.scale;
        }
    }
}

/// tinyBLAS's sums (eight lanes of fused multiply-adds over the rank, then [`hsum`]) of rows
/// `4t..4t+4` of `xs` with the first `RN` rows of `ys`, for every `t`, each added (scaled) to
/// its place in the first `RN` rows of `out`. `m` is a multiple of 4 and `k` of 8.
#[inline(always)]
fn tile<const RN: usize>(p: Product<'_>, out: &mut [f32]) {
    let (xs, ys, k, m, scale) = (p.xs, p.ys, p.k, p.m, p.scale);
    for i0 in (0..m).step_by(4) {
        let mut acc = [[[0f32; 8]; 4]; RN];
        for l in (0..k).step_by(8) {
            let x: [&[f32; 8]; 4] =
                std::array::from_fn(|a| xs[(i0 + a) * k + l..][..8].try_into().expect("8"));
            for (b, acc) in acc.iter_mut().enumerate() {
                let y: &[f32; 8] = ys[b * k + l..][..8].try_into().expect("8");
                for (acc, x) in acc.iter_mut().zip(x) {
                    for q in 0..8 {
                        acc[q] = x[q].mul_add(y[q], acc[q]);
                    }
                }
            }
        }
        for (b, acc) in acc.iter().enumerate() {
            for (a, acc) in acc.iter().enumerate() {
                out[b * m + i0 + a] += hsum(acc) * scale;
            }
        }
    }
}

/// tinyBLAS's `hsum` of its eight lanes (each lane its fused multiply-adds over every eighth
/// element of the rank, from +0).
#[inline(always)]
fn hsum(acc: &[f32; 8]) -> f32 {
    let s = [
        acc[4] + acc[0],
        acc[5] + acc[1],
        acc[6] + acc[2],
        acc[7] + acc[3],
    ];
    (s[0] + s[2]) + (s[1] + s[3])
}

/// ggml's `ggml_vec_dot_f32` as built (AVX2, FMA): four accumulators of eight lanes over each
/// 32 elements, reduced; then the rest, eight and four at a time as separately rounded products
/// added in order (the compiler's vectorized loop), the last few fused.
#[inline(always)]
fn dot_ggml(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len();
    let np = n & !31;
    let mut sum = [[0f32; 8]; 4];
    for i in (0..np).step_by(32) {
        for (j, s) in sum.iter_mut().enumerate() {
            let at = i + 8 * j;
            for ((s, x), y) in s.iter_mut().zip(&x[at..at + 8]).zip(&y[at..at + 8]) {
                *s = x.mul_add(*y, *s);
            }
        }
    }
    let v: [f32; 8] = std::array::from_fn(|q| (sum[0][q] + sum[2][q]) + (sum[1][q] + sum[3][q]));
    let t: [f32; 4] = std::array::from_fn(|q| v[q] + v[q + 4]);
    let mut sumf = (t[0] + t[1]) + (t[2] + t[3]);
    let mut i = np;
    let d = n - np;
    for _ in 0..d >> 3 {
        for q in 0..8 {
            sumf += x[i + q] * y[i + q];
        }
        i += 8;
    }
    if d & 7 >= 4 {
        for q in 0..4 {
            sumf += x[i + q] * y[i + q];
        }
        i += 4;
    }
    while i < n {
        sumf = x[i].mul_add(y[i], sumf);
        i += 1;
    }
    sumf
}
