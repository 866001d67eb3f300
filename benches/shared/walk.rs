//! The zero-copy view with every string read through it: shared by `benches/header.rs` and
//! `examples/view_walk.rs`, so that the criterion figure and the process timing measure the
//! same walk.

use ggufrw::view::GgufView;
use std::hint::black_box;

/// Makes the view of `bytes` and reads every key, string value, string of every array and
/// tensor name through it (each checked to be UTF-8, as the view hands strings out); returns
/// the bytes read.
pub fn walk(bytes: &[u8]) -> usize {
    let view = GgufView::new(black_box(bytes)).expect("decodes");
    let mut total = 0usize;
    for (key, value) in view.metadata() {
        total += key.len();
        if let Some(s) = value.as_str() {
            total += s.len();
        }
        if let Some(strings) = value.as_array().and_then(|a| a.strings()) {
            total += strings.map(|s| s.len()).sum::<usize>();
        }
    }
    total + view.tensors().map(|t| t.name.len()).sum::<usize>()
}
