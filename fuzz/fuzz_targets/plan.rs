//! Quantization plans from arbitrary headers, and the whole `quantize` job on the file: byte 0
//! picks the preset, byte 1 the options (`--pure`, `--leave-output-tensor`, an importance matrix
//! of ones for every tensor, `--prune-layers 1`, `--any-architecture`, `--allow-requantize`,
//! an output and a token-embedding type), the rest is the file. Never a panic; a plan holds
//! each kept tensor once, with the metadata of a header that encodes; the job succeeds only
//! where the plan does, writes a file that decodes with the plan's names, types and shapes,
//! and where it fails leaves nothing in its folder.
#![no_main]

use ggufrw::quantize::{self, Options, Plan, Run, PRESETS};
use ggufrw::{GgmlType, Gguf, Header};

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let [preset, flags, file @ ..] = data else {
        return;
    };
    let Ok(input) = Gguf::from_bytes(file) else {
        return;
    };
    let mut opts = Options::new(&PRESETS[usize::from(*preset) % PRESETS.len()]);
    opts.pure = flags & 1 != 0;
    opts.leave_output_tensor = flags & 2 != 0;
    opts.has_imatrix = flags & 4 != 0;
    if flags & 8 != 0 {
        opts.prune_layers = vec![1];
    }
    opts.any_architecture = flags & 16 != 0;
    if flags & 64 != 0 {
        opts.output_tensor_type = Some(GgmlType::Q8_0);
        opts.token_embedding_type = Some(GgmlType::Q4_K);
    }
    let header = input.header();
    let plan = Plan::new(&[header], &opts);
    // The driver and `--dry-run` plan only what `check_input` lets through.
    let accepted = quantize::check_input(header, input.layout(), file.len() as u64).is_ok();
    if let (Ok(plan), true) = (&plan, accepted) {
        check_plan(header, plan);
    }
    // Where the file's data is small, the job itself (quantizing is the slow part).
    if file.len() > 4096 {
        return;
    }
    let dir = tempfile::tempdir().expect("a scratch folder");
    let (path, output) = (dir.path().join("in.gguf"), dir.path().join("out.gguf"));
    std::fs::write(&path, file).expect("write the scratch file");
    let mut job = Run {
        allow_requantize: flags & 32 != 0,
        threads: 1,
        ..Run::default()
    };
    if let Ok(plan) = &plan {
        if opts.has_imatrix {
            // One weight a column for every tensor: what an importance matrix of ones gives.
            for t in &plan.tensors {
                let columns = t.dims.first().copied().unwrap_or(1).min(1 << 16) as usize;
                let experts = t.dims.get(2).copied().unwrap_or(1).min(256) as usize;
                let name = t.source_name.to_string();
                job.imatrix.insert(name, vec![1.0; columns * experts]);
            }
        }
    }
    let done = quantize::quantize(&path, &output, &opts, &job, &());
    assert_eq!(
        std::fs::read(&path).expect("the input is still there"),
        file,
        "the input was changed"
    );
    match done {
        Ok(report) => {
            assert!(accepted, "the job takes a file check_input refuses");
            let Ok(plan) = plan else {
                panic!("the job succeeds where the plan fails: {:?}", plan.err());
            };
            assert_eq!(
                report.plan.tensors, plan.tensors,
                "the job made another plan"
            );
            let bytes = std::fs::read(&output).expect("the output is there");
            let out = Gguf::from_bytes(&bytes[..]).expect("the output decodes");
            let infos = &out.header().tensor_infos;
            assert_eq!(infos.len(), plan.tensors.len());
            for (info, t) in infos.iter().zip(&plan.tensors) {
                assert_eq!(info.name, t.name);
                assert_eq!(info.ggml_type, t.to.id(), "{}", t.name);
                assert_eq!(info.dimensions, t.dims, "{}", t.name);
            }
        }
        Err(_) => {
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .expect("list the scratch folder")
                .map(|e| e.expect("an entry").file_name())
                .filter(|n| n != "in.gguf")
                .collect();
            assert!(left.is_empty(), "a failed job left {left:?}");
        }
    }
}

/// What every plan must be: each tensor of the input at most once, with its name and type, no
/// dimension gained, copied where it may not be quantized, and each output's keys unique.
fn check_plan(header: &Header, plan: &Plan) {
    let mut seen = vec![false; header.tensor_infos.len()];
    for t in &plan.tensors {
        assert!(
            !std::mem::replace(&mut seen[t.index], true),
            "{} twice",
            t.source_name
        );
        let info = &header.tensor_infos[t.index];
        assert_eq!(info.name, t.source_name);
        assert_eq!(GgmlType::from_id(info.ggml_type), Some(t.from));
        let kept = t.dims.len().max(1);
        assert!(
            kept <= info.dimensions.len().max(1),
            "{}: dimensions gained",
            t.name
        );
        if !t.quantizable {
            assert_eq!(t.from, t.to, "{}: not quantizable, yet converted", t.name);
        }
    }
    assert_eq!(plan.output_of.len(), plan.tensors.len());
    assert!(plan.output_of.iter().all(|&o| o < plan.metadata.len()));
    for metadata in &plan.metadata {
        let mut keys: Vec<_> = metadata.iter().map(|kv| kv.key.as_bytes()).collect();
        keys.sort_unstable();
        assert!(keys.windows(2).all(|w| w[0] != w[1]), "a key written twice");
    }
}
