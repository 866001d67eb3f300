//! ggufrw's `ggml` profile against ggml's own reader, linked in (built from the pinned
//! llama.cpp sources; the `ggml` feature): on any bytes, the profile has a structure error
//! exactly when ggml's header read (with a context, as llama.cpp's loader reads) refuses, and a
//! load error exactly when its full load then refuses; where ggml accepts, it reads the same
//! version, alignment, data offset, keys, values, tensor names, types, shapes, offsets and
//! sizes as ggufrw (compared as ggml hands them out: C strings, four dimensions). The known
//! exceptions are the ones `tests/peers/findings/` documents: a size that wraps is accepted by
//! ggml, a shape ggml aborts on is not given to it.
#![no_main]

use ggufrw::validate::{validate, Profile};
use ggufrw::Gguf;
use ggufrw_conform::ggml::verdict;
use ggufrw_fuzz::ggml::{data_size, ours, read};

ggufrw_fuzz::target!(run);

/// Where two descriptions first differ, line by line.
fn first_difference(ours: &str, ggml: &str) -> String {
    let (a, b): (Vec<_>, Vec<_>) = (ours.lines().collect(), ggml.lines().collect());
    for i in 0..a.len().max(b.len()) {
        if a.get(i) != b.get(i) {
            return format!("line {i}: ggufrw {:?}, ggml {:?}", a.get(i), b.get(i));
        }
    }
    String::new()
}

fn run(data: &[u8]) {
    let decoded = Gguf::from_bytes(data).ok();
    // ggml aborts on these shapes (ggml_new_tensor's assertion): documented, not asked again.
    if let Some(f) = &decoded {
        let findings = validate(f, Profile::Ggml);
        if findings.iter().any(|x| x.message.contains("ggml aborts")) {
            return;
        }
    }
    let v = verdict(data);
    let header = read(data, false);
    match (&v.header, &header) {
        (Some(_), None) => return,
        (Some(_), Some(_)) if v.exception.is_some() => return,
        (Some(why), Some(_)) => {
            panic!("the ggml profile refuses ({why}), ggml's header read accepts")
        }
        (None, None) => {
            panic!("ggml's header read refuses, the ggml profile has no structure error")
        }
        (None, Some(theirs)) => {
            let f = decoded.as_ref().expect("no structure error, so it decoded");
            let mine = ours(f);
            assert!(
                mine == *theirs,
                "ggml reads otherwise: {}",
                first_difference(&mine, theirs)
            );
        }
    }
    let f = decoded.as_ref().expect("accepted by both");
    // ggml's full load allocates the whole data section before reading it: past the input,
    // the read must fail (and a size past the memory would abort in ggml_init), so it is not
    // asked.
    let fits = data_size(f).is_some_and(|n| n <= data.len() as u64);
    let full = if fits { read(data, true) } else { None };
    match (&v.load, &full) {
        (None, Some(theirs)) => {
            let mine = ours(f);
            assert!(mine == *theirs, "ggml's full load reads otherwise: {}", first_difference(&mine, theirs));
        }
        (Some(_), None) => {}
        (Some(_), Some(_)) if v.exception.is_some() => {}
        (Some(why), Some(_)) => panic!("the ggml profile says the full load fails ({why}), ggml's accepts"),
        (None, None) => panic!("ggml's full load refuses (data section {:?} bytes), the ggml profile has no load error", data_size(f)),
    }
}
