//! The driver: the plan carried out, tensor by tensor from the memory map through the
//! streaming writer, rows quantized on every thread asked for.

use super::options::Options;
use super::plan::{Plan, PlannedTensor};
use super::QuantizeError;
use crate::error::TensorError;
use crate::error::{Error, Result};
use crate::file::Gguf;
use crate::fsutil::{Mode, Progress};
use crate::quant::{self, GgmlType};
use crate::validate::{validate_header, Profile, Severity};
use crate::write::{Builder, Part, Source};
use ggufrw_schema::{ByteOrder, Header, Layout, Value, ALIGNMENT_KEY};
use memmap2::Mmap;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How the job runs (what does not change the plan).
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// `--allow-requantize`: quantized inputs are dequantized (bit-exactly) and quantized
    /// again; without it such a tensor is refused.
    pub allow_requantize: bool,
    /// Threads for the rows (0: every processor). The bytes are the same for every count.
    pub threads: usize,
    /// Importance weights by weight name ([`super::imatrix::select`]); empty: none. The plan's
    /// `has_imatrix` must say whether there are any.
    pub imatrix: BTreeMap<String, Vec<f32>>,
}

/// What a quantization did (or, for a plan alone, would do).
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The plan carried out.
    pub plan: Plan,
    /// The files written (none for a plan alone).
    pub outputs: Vec<PathBuf>,
}

/// An input model: its first file and any other shards, mapped.
pub struct Model {
    /// The files, in shard order.
    pub files: Vec<(PathBuf, Gguf<Shared>)>,
    /// Their maps, to release pages from.
    maps: Vec<Shared>,
}

/// A memory map the driver can also hand pages back from (see [`release`]).
#[derive(Clone)]
pub struct Shared(Arc<Mmap>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn open_mapped(path: &Path) -> Result<(Gguf<Shared>, Shared)> {
    let map = Shared(Arc::new(crate::view::map(path)?));
    let file = Gguf::from_bytes(map.clone()).map_err(|e| e.in_file(path))?;
    Ok((file, map))
}

/// Drops the pages under `done` (bytes of `map` already read) from the process: a tensor read
/// once need not stay resident, so peak memory is a few slabs, not the model (llama-quantize
/// unmaps each tensor for the same reason).
fn release(map: &Shared, done: &[u8]) {
    crate::view::release(&map.0, done);
}

impl Model {
    /// Opens `path` and, when it is the first shard of a set, the other shards (merged as
    /// llama-quantize's loader merges them), each checked by [`check_input`].
    pub fn open(path: &Path) -> Result<Model> {
        // The first file is opened once: its header names the other shards.
        let first = open_mapped(path)?;
        let mut others = Vec::new();
        if crate::shards::declared_count(&first.0).is_some_and(|n| n > 1) {
            others = crate::shards::other_shards(path, &first.0).ok_or_else(|| {
                Error::from(QuantizeError::Plan(
                    "split.count says the model has shards, but the name is not a first \
                     shard's (…-00001-of-0000N.gguf)"
                        .into(),
                ))
                .in_file(path)
            })?;
        }
        let mut opened = vec![(path.to_path_buf(), first)];
        for p in others {
            let shard = open_mapped(&p)?;
            opened.push((p, shard));
        }
        let mut files = Vec::with_capacity(opened.len());
        let mut maps = Vec::with_capacity(opened.len());
        for (p, (file, map)) in opened {
            check_input(file.header(), file.layout(), file.bytes().len() as u64)
                .map_err(|e| Error::from(e).in_file(&p))?;
            files.push((p, file));
            maps.push(map);
        }
        Ok(Model { files, maps })
    }

    /// The plan for this model.
    pub fn plan(&self, opts: &Options) -> Result<Plan> {
        let headers: Vec<_> = self.files.iter().map(|(_, f)| f.header()).collect();
        Plan::new(&headers, opts).map_err(|e| Error::from(e).in_file(&self.files[0].0))
    }
}

/// Refuses an input llama-quantize's loader would not load, or would load into a broken output:
/// what ggml's reader refuses (the `ggml` profile's errors), and a `general.alignment` other
/// than 32 (llama-quantize would keep the key while laying the data out at 32, a file ggml then
/// refuses). `len` is the file's length (a remote file's as its server says), so that a plan
/// alone (`--dry-run`) refuses what the run would.
pub fn check_input(
    header: &Header,
    layout: &Layout,
    len: u64,
) -> std::result::Result<(), QuantizeError> {
    let refusals: Vec<String> = validate_header(header, layout, len, Profile::Ggml)
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.to_string())
        .collect();
    if !refusals.is_empty() {
        return Err(QuantizeError::Refused(refusals.join("; ")));
    }
    match header.metadata.iter().find(|kv| kv.key == *ALIGNMENT_KEY) {
        Some(kv) if kv.value != Value::Uint32(32) => {
            Err(QuantizeError::Alignment(format!("{:?}", kv.value)))
        }
        _ => Ok(()),
    }
}

/// The path of output shard `i` of `n` for `--keep-split` (llama.cpp's `llama_split_path`).
pub fn split_output_path(output: &Path, i: usize, n: usize) -> PathBuf {
    crate::shards::shard_path(output, i, n)
}

/// Quantizes the model at `input` to `output` as llama-quantize does, with the same bytes:
/// `output` is one file, or with `--keep-split` the prefix of the shards written. Each file
/// is written to a temporary file and renamed, so a failure leaves nothing.
pub fn quantize(
    input: &Path,
    output: &Path,
    opts: &Options,
    run: &Run,
    progress: &dyn Progress,
) -> Result<Report> {
    let model = Model::open(input)?;
    let plan = model.plan(opts)?;
    if !opts.has_imatrix {
        if let Some(t) = plan.needing_imatrix().next() {
            return Err(Error::from(QuantizeError::NeedsImatrix {
                tensor: t.name.to_string(),
                ty: t.to,
            })
            .in_file(input));
        }
    }
    let threads = quant::thread_count(run.threads);
    let n_out = plan.metadata.len();
    let mut outputs = Vec::with_capacity(n_out);
    for (out_index, metadata) in plan.metadata.iter().enumerate() {
        let path = if opts.keep_split {
            split_output_path(output, out_index, n_out)
        } else {
            output.to_path_buf()
        };
        let mut builder = Builder::new().with_metadata(metadata.clone());
        for (t, _) in plan
            .tensors
            .iter()
            .zip(&plan.output_of)
            .filter(|(_, &o)| o == out_index)
        {
            let (shard_path, file) = &model.files[t.shard];
            let data = file
                .tensor_data(t.index)
                .map_err(|e| e.in_file(shard_path))?;
            let order = file.header().byte_order;
            let len = t.output_bytes();
            let weights = imatrix_for(t, &opts.prune_layers, run)
                .map_err(|e| Error::from(e).in_file(input))?;
            let map = model.maps[t.shard].clone();
            let mapped = Input::Mapped(map);
            let chunks = Slabs::new(t, data, mapped, order, run, threads, weights)
                .map_err(|e| Error::from(e).in_file(shard_path))?
                .named(shard_path);
            builder = add_quantized(builder, t, chunks, len, input)?;
        }
        builder.write_file_with(&path, Mode::Plain, progress)?;
        outputs.push(path);
    }
    Ok(Report { plan, outputs })
}

/// `builder` with the planned tensor `t` added, its data the quantized `chunks` (`len` bytes);
/// errors name `file`, the model being quantized.
fn add_quantized<'a>(
    builder: Builder<'a>,
    t: &PlannedTensor,
    chunks: Slabs<'a>,
    len: u64,
    file: &Path,
) -> Result<Builder<'a>> {
    let source = Source::Chunks {
        chunks: Box::new(chunks),
        len,
    };
    (builder.tensor(t.name.clone(), t.to, &t.dims, source)).map_err(|e| e.in_file(file))
}

/// Quantizes the model `model` would write as [`quantize`] quantizes that file, to the same
/// bytes, without the file ever existing: each tensor's data is made when the output reaches it
/// (a checkpoint's rows being converted, say) and quantized as it comes, so neither the model
/// nor an intermediate file is held or written, only the output. `name` names the model in
/// errors. The output is one file: `keep_split` is refused, as the model has no shards.
pub fn quantize_built(
    model: Builder<'_>,
    name: &Path,
    output: &Path,
    opts: &Options,
    run: &Run,
    progress: &dyn Progress,
) -> Result<Report> {
    let (header, parts) = model.lay_out()?;
    let layout = header.layout().map_err(|e| Error::from(e).in_file(name))?;
    let len = layout.data_offset + parts.iter().map(Part::len).sum::<u64>();
    check_input(&header, &layout, len).map_err(|e| Error::from(e).in_file(name))?;
    if opts.keep_split {
        return Err(Error::from(QuantizeError::Plan(
            "--keep-split needs a model in shards; this one is being made as one file".into(),
        ))
        .in_file(name));
    }
    let plan = Plan::new(&[&header], opts).map_err(|e| Error::from(e).in_file(name))?;
    if !opts.has_imatrix {
        if let Some(t) = plan.needing_imatrix().next() {
            return Err(Error::from(QuantizeError::NeedsImatrix {
                tensor: t.name.to_string(),
                ty: t.to,
            })
            .in_file(name));
        }
    }
    let mut sources: Vec<Option<Source<'_>>> = parts
        .into_iter()
        .filter_map(|p| match p {
            Part::Data(s) => Some(Some(s)),
            Part::Zeros(_) => None,
        })
        .collect();
    let threads = quant::thread_count(run.threads);
    let metadata = plan.metadata.first().cloned().unwrap_or_default();
    let mut builder = Builder::new().with_metadata(metadata);
    for t in &plan.tensors {
        let source = sources
            .get_mut(t.index)
            .and_then(Option::take)
            .ok_or_else(|| {
                Error::from(QuantizeError::Plan(format!("{} is planned twice", t.name)))
                    .in_file(name)
            })?;
        let declared = source.len();
        let input = Input::Made {
            pieces: source.into_pieces(),
            pending: Vec::new(),
            left: declared,
            declared,
        };
        let weights =
            imatrix_for(t, &opts.prune_layers, run).map_err(|e| Error::from(e).in_file(name))?;
        let chunks = Slabs::new(t, &[], input, header.byte_order, run, threads, weights)
            .map_err(|e| Error::from(e).in_file(name))?
            .named(name);
        builder = add_quantized(builder, t, chunks, t.output_bytes(), name)?;
    }
    builder.write_file_with(output, Mode::Plain, progress)?;
    Ok(Report {
        plan,
        outputs: vec![output.to_path_buf()],
    })
}

/// The importance weights of a tensor to convert, found as llama-quantize finds them: by its
/// name with the layer number it had before `--prune-layers`; the size must be one row's per
/// expert (a token embedding of another size goes without, as llama-quantize lets it).
fn imatrix_for<'r>(
    t: &PlannedTensor,
    prune: &[u32],
    run: &'r Run,
) -> std::result::Result<Option<&'r [f32]>, QuantizeError> {
    if !t.converts() || run.imatrix.is_empty() {
        return Ok(None);
    }
    let name = if prune.is_empty() {
        t.name.to_string()
    } else {
        super::plan::unpruned_name(t)
    };
    let Some(w) = run.imatrix.get(&name) else {
        return Ok(None);
    };
    let d = |i: usize| t.dims.get(i).copied().unwrap_or(1);
    let want = d(0) * d(2);
    if w.len() as u64 == want {
        return Ok(Some(w));
    }
    let token_embd = matches!(
        t.name.as_bytes(),
        b"token_embd.weight" | b"per_layer_token_embd.weight"
    );
    if token_embd {
        return Ok(None);
    }
    Err(QuantizeError::Imatrix(format!(
        "imatrix size {} is different from tensor size {want} for {}",
        w.len(),
        t.name
    )))
}

/// One tensor's rows converted from one type to another a slab at a time: dequantized, then
/// quantized expert by expert, each matrix of `ne[1]` rows with its own slice of the
/// importance weights (a row's worth a matrix), as llama-quantize hands them out. A slab may
/// hold the end of one matrix and the start of the next. Both drivers, `quantize` and
/// `tools::convert`, take their slabs from it.
pub(crate) struct Rows<'a> {
    src: &'a [u8],
    from: GgmlType,
    to: GgmlType,
    row_elements: usize,
    rows_per_expert: usize,
    weights: Option<&'a [f32]>,
    threads: usize,
    /// The first row of the next slab, counted over every expert.
    row: usize,
}

impl<'a> Rows<'a> {
    /// The rows of `src`, a tensor of `from` with dimensions `dims`, to become `to`.
    pub(crate) fn new(
        src: &'a [u8],
        (from, to): (GgmlType, GgmlType),
        dims: &[u64],
        weights: Option<&'a [f32]>,
        threads: usize,
    ) -> Rows<'a> {
        Rows {
            src,
            from,
            to,
            row_elements: dims.first().copied().unwrap_or(1) as usize,
            rows_per_expert: dims.get(1).copied().unwrap_or(1).max(1) as usize,
            weights,
            threads,
            row: 0,
        }
    }

    /// Whether every row has been taken.
    pub(crate) fn is_done(&self) -> bool {
        self.src.is_empty()
    }

    /// Bytes of one source row.
    fn row_bytes(&self) -> usize {
        (self.row_elements / self.from.block_size() as usize * self.from.type_size() as usize)
            .max(1)
    }

    /// Rows in a slab: about [`SLAB`] bytes a thread.
    fn slab_rows(&self) -> usize {
        (SLAB * self.threads / self.row_bytes()).max(1)
    }

    /// The next slab of the source: whole rows, about [`SLAB`] bytes a thread.
    pub(crate) fn take(&mut self) -> &'a [u8] {
        let row = self.row_bytes();
        let rows = self.slab_rows();
        let (chunk, rest) = self.src.split_at((rows * row).min(self.src.len()));
        self.src = rest;
        chunk
    }

    /// The slab just taken, stored in `order`, converted to little-endian blocks of `to`.
    pub(crate) fn convert(
        &mut self,
        chunk: &[u8],
        order: ByteOrder,
    ) -> std::result::Result<Vec<u8>, crate::quant::QuantError> {
        let n = chunk.len() / self.from.type_size() as usize * self.from.block_size() as usize;
        let mut values = vec![0f32; n];
        quant::dequantize_threads(self.from, chunk, order, &mut values, self.threads)?;
        let mut out = vec![0u8; n / self.to.block_size() as usize * self.to.type_size() as usize];
        let rows = n / self.row_elements.max(1);
        let out_row = out.len() / rows.max(1);
        let (elements, per_expert) = (self.row_elements, self.rows_per_expert);
        let mut r = 0;
        while r < rows {
            let global = self.row + r;
            let expert = global / per_expert;
            let end = rows.min(r + (per_expert - global % per_expert));
            let w = self
                .weights
                .map(|w| &w[expert * elements..(expert + 1) * elements]);
            quant::quantize_into_weighted_threads(
                self.to,
                &values[r * elements..end * elements],
                elements,
                w,
                &mut out[r * out_row..end * out_row],
                self.threads,
            )?;
            r = end;
        }
        self.row += rows;
        Ok(out)
    }
}

/// Bytes of input each slab takes per thread: large enough to keep the threads busy, small
/// enough that memory stays a few MiB whatever the tensor.
const SLAB: usize = 1 << 20;

/// Where a tensor's rows come from.
enum Input<'a> {
    /// A mapped file (the rows borrowed from it), its pages dropped as slabs are done.
    Mapped(Shared),
    /// Pieces made as they are read, gathered until they are whole rows.
    Made {
        pieces: Box<dyn Iterator<Item = Result<Vec<u8>>> + 'a>,
        /// Bytes read but not yet taken.
        pending: Vec<u8>,
        /// Bytes still to come.
        left: u64,
        /// Bytes the source declared.
        declared: u64,
    },
}

/// One tensor's output, made a slab of rows at a time: checked as llama.cpp's loader checks
/// what it reads, converted, and checked again as llama-quantize checks what it wrote.
struct Slabs<'a> {
    name: String,
    index: usize,
    rows: Rows<'a>,
    input: Input<'a>,
    order: ByteOrder,
    failed: bool,
    /// The file named in a conversion's errors.
    file: PathBuf,
}

impl<'a> Slabs<'a> {
    fn new(
        t: &PlannedTensor,
        src: &'a [u8],
        input: Input<'a>,
        order: ByteOrder,
        run: &Run,
        threads: usize,
        weights: Option<&'a [f32]>,
    ) -> std::result::Result<Slabs<'a>, QuantizeError> {
        let name = t.name.to_string();
        if t.converts() {
            if weights.is_none() && t.requires_imatrix {
                return Err(QuantizeError::NeedsImatrix {
                    tensor: name,
                    ty: t.to,
                });
            }
            if t.from.is_quantized() && !run.allow_requantize {
                return Err(QuantizeError::Requantize {
                    tensor: name,
                    from: t.from,
                });
            }
            let dequantizes = t.from.is_quantized()
                || matches!(t.from, GgmlType::F16 | GgmlType::BF16 | GgmlType::F32);
            if !dequantizes {
                return Err(QuantizeError::CannotConvert {
                    tensor: name,
                    from: t.from,
                });
            }
        }
        Ok(Slabs {
            name,
            index: t.index,
            rows: Rows::new(src, (t.from, t.to), &t.dims, weights, threads),
            input,
            order,
            failed: false,
            file: PathBuf::new(),
        })
    }

    fn named(mut self, file: &Path) -> Self {
        self.file = file.to_path_buf();
        self
    }

    fn is_done(&self) -> bool {
        match &self.input {
            Input::Mapped(_) => self.rows.is_done(),
            Input::Made { pending, left, .. } => pending.is_empty() && *left == 0,
        }
    }

    fn next_slab(&mut self) -> Result<Vec<u8>> {
        let in_file = |e: QuantizeError, file: &Path| Error::from(e).in_file(file);
        match &mut self.input {
            Input::Mapped(map) => {
                let map = map.clone();
                let chunk = self.rows.take();
                let out = self.convert(chunk).map_err(|e| in_file(e, &self.file));
                release(&map, chunk);
                out
            }
            Input::Made { .. } => {
                let chunk = self.gather()?;
                self.convert(&chunk).map_err(|e| in_file(e, &self.file))
            }
        }
    }

    /// The next whole rows of a made input, about a slab's worth.
    fn gather(&mut self) -> Result<Vec<u8>> {
        let row = self.rows.row_bytes();
        let want = self.rows.slab_rows() * row;
        let (index, name) = (self.index, self.name.clone());
        let Input::Made {
            pieces,
            pending,
            left,
            declared,
        } = &mut self.input
        else {
            unreachable!("gather is for made inputs");
        };
        let wrong_length = |gave: u64, declared: u64| Error::Tensor {
            index,
            name: name.clone(),
            source: TensorError::SourceLength { gave, declared },
        };
        while pending.len() < want && *left > 0 {
            let piece = match pieces.next() {
                Some(piece) => piece?,
                None => return Err(wrong_length(*declared - *left, *declared)),
            };
            if piece.len() as u64 > *left {
                return Err(wrong_length(
                    *declared - *left + piece.len() as u64,
                    *declared,
                ));
            }
            *left -= piece.len() as u64;
            pending.extend_from_slice(&piece);
        }
        let whole = if *left == 0 {
            pending.len()
        } else {
            pending.len() / row * row
        };
        let rest = pending.split_off(whole.min(want));
        Ok(std::mem::replace(pending, rest))
    }

    fn convert(&mut self, chunk: &[u8]) -> std::result::Result<Vec<u8>, QuantizeError> {
        let (from, to) = (self.rows.from, self.rows.to);
        let le = match self.order {
            ByteOrder::Little => std::borrow::Cow::Borrowed(chunk),
            ByteOrder::Big => {
                let mut v = chunk.to_vec();
                quant::swap_in_place(from, &mut v)?;
                std::borrow::Cow::Owned(v)
            }
        };
        quant::validate_row_data(from, &le).map_err(|source| QuantizeError::InvalidData {
            tensor: self.name.clone(),
            source,
        })?;
        if from == to {
            return Ok(le.into_owned());
        }
        let out = self.rows.convert(&le, ByteOrder::Little)?;
        quant::validate_row_data(to, &out).map_err(|source| QuantizeError::QuantizedInvalid {
            tensor: self.name.clone(),
            source,
        })?;
        Ok(out)
    }
}

impl Iterator for Slabs<'_> {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.is_done() {
            return None;
        }
        let r = self.next_slab();
        self.failed = r.is_err();
        Some(r)
    }
}
