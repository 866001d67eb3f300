//! Lossless: every input that decodes is written back byte for byte, and the written bytes
//! decode to the same header (floats compared by their bits) and layout.
#![no_main]

use ggufrw::Gguf;
use ggufrw_fuzz::same_header;

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Ok(file) = Gguf::from_bytes(data) else {
        return;
    };
    let bytes = file
        .to_bytes()
        .unwrap_or_else(|e| panic!("a decoded file does not encode: {e}"));
    if bytes != data {
        let at = bytes.iter().zip(data).position(|(a, b)| a != b);
        panic!(
            "re-encoded bytes differ: {} bytes in, {} out, first difference at {at:?}",
            data.len(),
            bytes.len()
        );
    }
    let again = Gguf::from_bytes(&bytes[..])
        .unwrap_or_else(|e| panic!("the re-encoded bytes do not decode: {e}"));
    assert!(
        same_header(file.header(), again.header()),
        "the re-encoded bytes decode to another header"
    );
    assert_eq!(file.layout(), again.layout());
    // The header alone encodes to the bytes before the data section.
    let data_follows = !file.data_section().is_empty();
    let header = (file.header().encode(data_follows))
        .unwrap_or_else(|e| panic!("the header does not encode: {e}"));
    assert!(
        data.starts_with(&header),
        "the header alone encodes differently"
    );
}
