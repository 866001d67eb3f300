//! `Gguf::from_bytes` on arbitrary bytes: no panic, no allocation out of proportion to the
//! input, no leak; a failure is a one-line `DecodeError` inside the input; a success has a
//! consistent layout and dumps as JSON and as text.
#![no_main]

use ggufrw::Gguf;
use ggufrw_fuzz::{check_decode_error, decode_allocation_bound, no_leak, peak_of, Tracking};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: Tracking = Tracking;

fuzz_target!(|data: &[u8]| no_leak(data, run));

fn run(data: &[u8]) {
    let len = data.len();
    let (result, peak) = peak_of(|| Gguf::from_bytes(data));
    assert!(
        peak <= decode_allocation_bound(len),
        "decoding {len} bytes allocated {peak} bytes at once (bound {})",
        decode_allocation_bound(len)
    );
    let file = match result {
        Ok(file) => file,
        Err(e) => return check_decode_error(&e, len),
    };

    // The layout is consistent with the header and the input.
    let (header, layout) = (file.header(), file.layout());
    assert_eq!(layout.kv_offsets.len(), header.metadata.len());
    assert_eq!(layout.tensor_info_offsets.len(), header.tensor_infos.len());
    let starts = layout.kv_offsets.iter().chain(&layout.tensor_info_offsets);
    let mut previous = 0;
    for &start in starts {
        assert!(start > previous, "field starts not increasing: {layout:?}");
        previous = start;
    }
    assert!(layout.tensor_infos_end > previous || previous == 0);
    assert!(layout.tensor_infos_end <= len as u64, "{layout:?}");
    assert!(layout.alignment > 0);
    assert_eq!(
        layout.data_offset % u64::from(layout.alignment),
        0,
        "{layout:?}"
    );
    assert!(layout.data_offset >= layout.tensor_infos_end);
    assert!(layout.data_offset - layout.tensor_infos_end < u64::from(layout.alignment));
    assert_eq!(file.bytes(), data);

    let json = ggufrw::json::dump_json(&file).to_string();
    assert!(json.starts_with('{'));
    let text = ggufrw::json::dump_text(&file);
    assert!(text.starts_with("GGUF v"));
}
