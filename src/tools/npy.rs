//! NumPy's `.npy` format (version 1.0): a magic, a header dict (`descr`, `fortran_order`,
//! `shape`) padded to 64 bytes, then the array's bytes in C order.

use crate::quant::GgmlType;
use ggufrw_schema::ByteOrder;
use std::io::{self, Write};

/// NumPy's name for the elements of a plain (not block) type stored in `order`; `None` for
/// block types, whose rows are bytes (`|u1`). NumPy has no bfloat16: BF16 is its bits (`u2`).
pub fn descr(ty: GgmlType, order: ByteOrder) -> Option<String> {
    let e = if order == ByteOrder::Big { '>' } else { '<' };
    let kind = match ty {
        GgmlType::F32 => "f4",
        GgmlType::F16 => "f2",
        GgmlType::F64 => "f8",
        GgmlType::I16 => "i2",
        GgmlType::I32 => "i4",
        GgmlType::I64 => "i8",
        GgmlType::I8 => return Some("|i1".into()),
        GgmlType::BF16 => "u2",
        _ => return None,
    };
    Some(format!("{e}{kind}"))
}

/// The header of an array of `descr` elements (`<f4`, `>i2`, `|u1`…) and `shape` (NumPy
/// order: slowest-varying first).
pub fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + dict + newline: a multiple of 64.
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes the header; the caller writes the data.
pub fn write_header<W: Write>(out: &mut W, descr: &str, shape: &[u64]) -> io::Result<()> {
    out.write_all(&header(descr, shape))
}

#[cfg(test)]
mod tests {
    #[test]
    fn headers_are_padded_to_64_bytes() {
        for shape in [&[][..], &[3], &[2, 3, 4]] {
            let h = super::header("<f4", shape);
            assert_eq!(h.len() % 64, 0);
            assert!(h.ends_with(b"\n"));
        }
        let h = super::header("<f4", &[5]);
        assert!(String::from_utf8_lossy(&h).contains("'shape': (5,)"));
    }
}
