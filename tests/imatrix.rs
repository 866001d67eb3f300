//! Importance matrices made by llama-imatrix itself, built from the pinned llama.cpp sources
//! beside llama-quantize (`scripts/ggml.sh --tools`; `GGUFRW_LLAMA_TOOLS` names the directory):
//! one computed on the real Gemma 3 270M model from a committed text (tests/imatrix/text.txt),
//! once per test process and cached under the target folder, and one written by hand for what
//! a dense model's matrix never holds (experts, counts of zero, -0). Against llama-imatrix:
//! `ggufrw imatrix convert` in both directions and to the same format, byte for byte, and
//! `ggufrw imatrix show`'s entries, chunks and datasets; against llama-quantize: `ggufrw
//! quantize --imatrix` with the real matrix in both forms, filtered or not, byte for byte.
//! Where a tool could not be built or the model is not set up, these tests say SKIPPED and
//! check nothing. `GGUFRW_QUANTIZE_MATRIX=1` runs every preset that takes a matrix.

use crate::common;
use crate::quantize::{compare, llama_quantize};
use common::run;

use ggufrw::{Builder, GgmlType};
use std::path::{Path, PathBuf};

use std::sync::OnceLock;

/// llama-imatrix beside llama-quantize, or `None` after saying SKIPPED (a failure where
/// `GGUFRW_REQUIRE_PEERS` is set: the build that made llama-quantize makes it too).
fn llama_imatrix() -> Option<PathBuf> {
    let p = llama_quantize()?.with_file_name("llama-imatrix");
    common::peer_or_skip(if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "{} is missing (scripts/ggml.sh --tools builds it)",
            p.display()
        ))
    })
}

/// `program ARGS` in `dir`, which must succeed: what it printed on stdout and stderr.
fn run_ok(program: &Path, args: &[&str], dir: &Path) -> String {
    let out = run(program, args, dir);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} {args:?}: {}\n{text}",
        program.display(),
        out.status
    );
    text
}

fn ggufrw_ok(dir: &Path, args: &[&str]) -> String {
    run_ok(Path::new(env!("CARGO_BIN_EXE_ggufrw")), args, dir)
}

/// How the real matrix is computed: short chunks, few of them, on two threads (the model's
/// vocabulary of 262,144 makes every token's logits cost most of the time).
const CHUNK: &str = "64";
const IMATRIX_ARGS: &[&str] = &[
    "-f",
    "text.txt",
    "-o",
    "imatrix.gguf",
    "-c",
    CHUNK,
    "--chunks",
    "4",
    "-t",
    "2",
    "--no-ppl",
];

/// The folder holding `imatrix.gguf`, computed by llama-imatrix on the real model from
/// tests/imatrix/text.txt (named `text.txt` there, the dataset it records). Kept under the
/// target folder, named by what it was made from (the text, the arguments, the tool's bytes),
/// so that a later run reuses it; made in a folder of its own and renamed into place, so that
/// test processes running at once never see half of it.
fn real_matrix(imatrix_tool: &Path, model: &Path) -> PathBuf {
    static ONCE: OnceLock<PathBuf> = OnceLock::new();
    ONCE.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let text = std::fs::read(common::root().join("tests/imatrix/text.txt")).unwrap();
        let mut h = Sha256::new();
        h.update(&text);
        h.update(IMATRIX_ARGS.join("\0"));
        h.update(common::GEMMA_SHA256);
        h.update(std::fs::read(imatrix_tool).unwrap());
        let key = format!("{:x}", h.finalize());
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let dir = base.join(format!("imatrix-{}", &key[..16]));
        if dir.join("imatrix.gguf").exists() {
            return dir;
        }
        std::fs::create_dir_all(base).unwrap();
        let staging = tempfile::tempdir_in(base).unwrap();
        std::fs::write(staging.path().join("text.txt"), &text).unwrap();
        let mut args = vec!["-m", model.to_str().unwrap()];
        args.extend(IMATRIX_ARGS);
        run_ok(imatrix_tool, &args, staging.path());
        let staged = staging.keep();
        // Another process may have put its own in place first: the same bytes, keep that one.
        if std::fs::rename(&staged, &dir).is_err() {
            std::fs::remove_dir_all(&staged).unwrap();
        }
        dir
    })
    .clone()
}

/// The tools, the model and the real matrix, or `None` after saying SKIPPED.
fn setup() -> Option<(PathBuf, PathBuf, PathBuf, PathBuf)> {
    let quantize = llama_quantize()?;
    let imatrix = llama_imatrix()?;
    let model = common::gemma()?;
    let matrix = real_matrix(&imatrix, &model).join("imatrix.gguf");
    Some((quantize, imatrix, model, matrix))
}

/// Whether two files hold the same bytes; where not, the first difference: for GGUF files the
/// first differing key or tensor, else the offset.
fn difference(ours: &Path, theirs: &Path) -> Option<String> {
    let (a, b) = (std::fs::read(ours).unwrap(), std::fs::read(theirs).unwrap());
    if a == b {
        return None;
    }
    if let (Ok(fa), Ok(fb)) = (ggufrw::Gguf::open(ours), ggufrw::Gguf::open(theirs)) {
        let (ha, hb) = (fa.header(), fb.header());
        for (x, y) in ha.metadata.iter().zip(&hb.metadata) {
            if x != y {
                return Some(format!("key: ours {x:?}, theirs {y:?}"));
            }
        }
        for (i, (x, y)) in ha.tensor_infos.iter().zip(&hb.tensor_infos).enumerate() {
            if x != y {
                return Some(format!("tensor info {i}: ours {x:?}, theirs {y:?}"));
            }
            if fa.tensor_data(i).ok() != fb.tensor_data(i).ok() {
                return Some(format!("tensor {} data differs", x.name));
            }
        }
    }
    let at = a.iter().zip(&b).position(|(x, y)| x != y);
    Some(format!(
        "{} and {} bytes, first difference at {at:?}",
        a.len(),
        b.len()
    ))
}

/// Converts `input` (in `dir`) to `to` (gguf or dat) with both tools at `chunk` tokens a chunk
/// (`None`: neither is told, each takes its default) and asserts the same bytes. ggufrw is
/// told the format with `--to` where `explicit`, else it takes it from the output's extension
/// (both ways are its interface). Returns llama-imatrix's file.
fn convert_both(
    imatrix_tool: &Path,
    dir: &Path,
    input: &str,
    to: &str,
    chunk: Option<&str>,
    explicit: bool,
) -> String {
    let tag = format!("{input}-{}", chunk.unwrap_or("default")).replace('.', "_");
    let (theirs, ours) = (format!("theirs-{tag}.{to}"), format!("ours-{tag}.{to}"));
    let mut args = vec![
        "-m",
        "unused.gguf",
        "--in-file",
        input,
        "-o",
        &theirs,
        "--output-format",
        to,
    ];
    if let Some(c) = chunk {
        args.extend(["-c", c]);
    }
    run_ok(imatrix_tool, &args, dir);
    let mut mine = vec!["imatrix", "convert", input, &ours];
    if explicit {
        mine.extend(["--to", to]);
    }
    if let Some(c) = chunk {
        mine.extend(["--chunk-size", c]);
    }
    ggufrw_ok(dir, &mine);
    if let Some(d) = difference(&dir.join(&ours), &dir.join(&theirs)) {
        panic!("{input} to {to} at chunk size {chunk:?}: {d}");
    }
    theirs
}

/// Every conversion of `input` (a GGUF file in `dir`) at `chunk`: to the legacy format, that
/// back to GGUF, and each format to itself. Returns the tensors of the two GGUF files and the
/// entries of the two legacy files compared.
fn convert_every_way(
    imatrix_tool: &Path,
    dir: &Path,
    input: &str,
    chunk: Option<&str>,
) -> (usize, usize) {
    let dat = convert_both(imatrix_tool, dir, input, "dat", chunk, false);
    let ggufs = [
        convert_both(imatrix_tool, dir, &dat, "gguf", chunk, false),
        convert_both(imatrix_tool, dir, input, "gguf", chunk, true),
    ];
    let dats = [
        dat.clone(),
        convert_both(imatrix_tool, dir, &dat, "dat", chunk, true),
    ];
    let tensors: usize = ggufs
        .iter()
        .map(|f| {
            ggufrw::Gguf::open(dir.join(f))
                .unwrap()
                .header()
                .tensor_infos
                .len()
        })
        .sum();
    let entries: usize = dats
        .iter()
        .map(|f| {
            let b = std::fs::read(dir.join(f)).unwrap();
            i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
        })
        .sum();
    assert!(tensors > 0 && entries > 0);
    (tensors, entries)
}

/// The real matrix converted both ways and to itself, at its own chunk size, at the default
/// (512) and at one past llama-imatrix's batch and the matrix's 256 tokens (3000: a chunk count
/// of 0, and a legacy call count rounded up to 1).
#[test]
fn real_matrix_converts_as_llama_imatrix_converts_it() {
    let Some((_, imatrix_tool, _, matrix)) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&matrix, dir.path().join("real.gguf")).unwrap();
    let (mut tensors, mut entries) = (0, 0);
    for chunk in [Some(CHUNK), None, Some("3000")] {
        let (t, e) = convert_every_way(&imatrix_tool, dir.path(), "real.gguf", chunk);
        (tensors, entries) = (tensors + t, entries + e);
    }
    eprintln!(
        "12 conversions byte-identical: {tensors} tensors in 6 GGUF files, {entries} entries \
         in 6 legacy files"
    );
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// What a dense model's matrix does not hold, converted as llama-imatrix converts it: an
/// entry of four experts with one unused (its counts stay a 2-D [1, 4] tensor), an entry whose
/// every count is zero (the legacy format leaves it out), a stored -0 and a non-integer
/// count, two datasets (the legacy format keeps the last).
#[test]
fn unusual_matrices_convert_as_llama_imatrix_converts_them() {
    let Some(imatrix_tool) = llama_imatrix() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sums: Vec<f32> = (0..32).map(|i| (i * i) as f32 * 0.37 + 0.5).collect();
    let mut dense = sums[..8].to_vec();
    dense[3] = -0.0;
    let datasets = ["first.txt", "second.txt"].into_iter().collect();
    Builder::new()
        .metadata("general.type", "imatrix")
        .metadata(
            "imatrix.datasets",
            ggufrw::Value::Array(ggufrw::schema::Array::new(ggufrw::ArrayValues::String(
                datasets,
            ))),
        )
        .metadata("imatrix.chunk_count", 3u32)
        .metadata("imatrix.chunk_size", 64u32)
        .tensor(
            "blk.0.ffn_up_exps.weight.in_sum2",
            GgmlType::F32,
            &[8, 4],
            f32_bytes(&sums),
        )
        .unwrap()
        .tensor(
            "blk.0.ffn_up_exps.weight.counts",
            GgmlType::F32,
            &[1, 4],
            f32_bytes(&[192.0, 0.0, 70.4, 128.5]),
        )
        .unwrap()
        .tensor(
            "blk.0.attn_q.weight.in_sum2",
            GgmlType::F32,
            &[8],
            f32_bytes(&dense),
        )
        .unwrap()
        .tensor(
            "blk.0.attn_q.weight.counts",
            GgmlType::F32,
            &[1],
            f32_bytes(&[192.0]),
        )
        .unwrap()
        .tensor(
            "blk.0.unused.weight.in_sum2",
            GgmlType::F32,
            &[8],
            f32_bytes(&sums[8..16]),
        )
        .unwrap()
        .tensor(
            "blk.0.unused.weight.counts",
            GgmlType::F32,
            &[1],
            f32_bytes(&[0.0]),
        )
        .unwrap()
        .write_file(&dir.path().join("unusual.gguf"))
        .unwrap();
    let (mut tensors, mut entries) = (0, 0);
    for chunk in [Some("64"), None] {
        let (t, e) = convert_every_way(&imatrix_tool, dir.path(), "unusual.gguf", chunk);
        (tensors, entries) = (tensors + t, entries + e);
    }
    eprintln!(
        "8 conversions of an unusual matrix byte-identical: {tensors} tensors in 4 GGUF \
         files, {entries} entries in 4 legacy files"
    );
}

/// The first line of `ggufrw imatrix show`: entries, chunks and datasets.
fn shown_summary(dir: &Path, file: &str) -> (usize, i64, String) {
    let shown = ggufrw_ok(dir, &["imatrix", "show", file]);
    let first = shown.lines().next().unwrap();
    let number_before = |what: &str| -> i64 {
        let before = &first[..first.find(what).unwrap_or_else(|| panic!("{first}"))];
        before.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let datasets = first.split("datasets ").nth(1).unwrap().to_owned();
    (
        number_before(" entries") as usize,
        number_before(" chunks"),
        datasets,
    )
}

/// `imatrix show` reports the entries, chunks and datasets llama-quantize reports when it
/// loads the file (llama-imatrix's own loader, which llama-imatrix --show-statistics uses too),
/// and the entries --show-statistics counts where it prints them, for both forms.
#[test]
fn show_reports_what_llama_tools_report() {
    let Some((quantize_tool, imatrix_tool, model, matrix)) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&matrix, dir.path().join("imatrix.gguf")).unwrap();
    let dat = convert_both(
        &imatrix_tool,
        dir.path(),
        "imatrix.gguf",
        "dat",
        Some(CHUNK),
        false,
    );
    let model = model.to_str().unwrap();
    for file in ["imatrix.gguf", dat.as_str()] {
        let loaded = run_ok(
            &quantize_tool,
            &["--dry-run", "--imatrix", file, model, "Q4_0"],
            dir.path(),
        );
        let line = |prefix: &str| {
            loaded
                .lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no {prefix:?} in\n{loaded}"))
                .to_owned()
        };
        let datasets = line("load_imatrix: imatrix datasets=");
        let counts = line("load_imatrix: loaded ");
        let stats = statistics_count(&imatrix_tool, dir.path(), file);
        let (entries, chunks, shown_datasets) = shown_summary(dir.path(), file);
        assert_eq!(
            counts,
            format!("{entries} importance matrix entries from {file} computed on {chunks} chunks"),
            "{file}"
        );
        assert_eq!(
            datasets.replace('\'', "\""),
            shown_datasets,
            "{file}: datasets"
        );
        match stats {
            Some(n) => assert_eq!(n, format!("{entries} tensors)"), "{file}"),
            None => eprintln!(
                "{file}: llama-imatrix --show-statistics printed no count in 10 runs (its log \
                 is written by a thread the program does not wait for)"
            ),
        }
        eprintln!(
            "{file}: {entries} entries, {chunks} chunks, datasets {shown_datasets}: as \
             llama-quantize reports"
        );
    }
}

/// The entry count `llama-imatrix --show-statistics` prints for `file` (as `N tensors)`).
/// Its log goes through a thread that the statistics path does not flush before it returns,
/// so a run can print nothing at all: up to ten runs, `None` when none printed it.
fn statistics_count(imatrix_tool: &Path, dir: &Path, file: &str) -> Option<String> {
    let prefix = format!("Computing statistics for {file} (");
    (0..10).find_map(|_| {
        let text = run_ok(
            imatrix_tool,
            &["-m", "unused.gguf", "--in-file", file, "--show-statistics"],
            dir,
        );
        text.lines()
            .find_map(|l| l.split_once(&prefix).map(|(_, rest)| rest.to_owned()))
    })
}

/// The presets whose quantizers read an importance matrix: not the float types, COPY, Q8_0,
/// the ternary ones, MXFP4_MOE, nor Q1_0 and Q2_0 (ggml's quantizers take one and ignore it).
const MATRIX_PRESETS: &[&str] = &[
    "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S",
    "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M",
    "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M", "IQ4_NL", "IQ4_XS",
];

/// The real model requantized with the real matrix by both tools: the GGUF form and
/// llama-imatrix's legacy form of it, unfiltered, with `--include-weights` and with
/// `--exclude-weights`. Most cases keep two of the 18 layers (`--prune-layers`: llama-quantize
/// looks a kept layer's matrix up under its old name) and make the token embeddings Q8_0 (they
/// take no matrix), so that the IQ searches run over a few million weights, not 100 million;
/// one case runs the whole model. CI runs one case per form and filter;
/// `GGUFRW_QUANTIZE_MATRIX=1` every preset that takes a matrix with each.
#[test]
fn real_matrix_quantizes_as_llama_quantize_does() {
    let Some((quantize_tool, imatrix_tool, model, matrix)) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    link_or_copy(&model, &d.join("gemma.gguf"));
    std::fs::copy(&matrix, d.join("imatrix.gguf")).unwrap();
    let dat = convert_both(&imatrix_tool, d, "imatrix.gguf", "dat", Some(CHUNK), false);
    std::fs::rename(d.join(dat), d.join("imatrix.dat")).unwrap();
    let pruned = (0..16).map(|l| l.to_string()).collect::<Vec<_>>().join(",");
    let small = [
        "--prune-layers",
        pruned.as_str(),
        "--token-embedding-type",
        "q8_0",
    ];
    // Each form with the presets CI runs. Where every preset runs, some are refused by both
    // tools (IQ3_XXS with a filter: a tensor of a very low-bit type left without weights):
    // `compare` has checked that both refuse; they are listed, not counted as identical.
    let forms: [(&[&str], &[&str]); 4] = [
        (&["--imatrix", "imatrix.gguf"], &["IQ2_XXS"]),
        (&["--imatrix", "imatrix.dat"], &["IQ1_S", "Q4_K_M"]),
        (
            &["--imatrix", "imatrix.gguf", "--include-weights", "attn"],
            &["IQ2_XS"],
        ),
        (
            &["--imatrix", "imatrix.dat", "--exclude-weights", "ffn_down"],
            &["IQ2_M"],
        ),
    ];
    let every = std::env::var_os("GGUFRW_QUANTIZE_MATRIX").is_some();
    let (mut same, mut refused) = (Vec::new(), Vec::new());
    for (options, ci) in forms {
        let mut opts = vec!["--allow-requantize"];
        opts.extend(options);
        opts.extend(small);
        for p in if every { MATRIX_PRESETS } else { ci } {
            let what = format!("{p} {}", options.join(" "));
            if compare(&quantize_tool, d, "gemma.gguf", &opts, p) {
                same.push(what);
            } else {
                assert!(every, "{what}: refused by both");
                refused.push(what);
            }
        }
    }
    // The whole model: every entry of the matrix used.
    let whole = ["--allow-requantize", "--imatrix", "imatrix.gguf"];
    assert!(compare(&quantize_tool, d, "gemma.gguf", &whole, "Q2_K"));
    same.push("Q2_K --imatrix imatrix.gguf, the whole model".into());
    eprintln!(
        "{} outputs with the real matrix byte-identical: {}",
        same.len(),
        same.join("; ")
    );
    if !refused.is_empty() {
        eprintln!("refused by both: {}", refused.join("; "));
    }
}

/// A link to the model where the system has them (it is 250 MB), else a copy.
fn link_or_copy(from: &Path, to: &Path) {
    #[cfg(unix)]
    if std::os::unix::fs::symlink(from, to).is_ok() {
        return;
    }
    std::fs::copy(from, to).unwrap();
}
