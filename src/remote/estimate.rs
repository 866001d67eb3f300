//! Where a header probably ends, from the part of it fetched so far: what the schema can tell
//! from a prefix. Complete metadata pairs and tensor infos are read with the schema's own types;
//! for the item the prefix cuts, its count and element type say how long it is (exactly for
//! numbers, from the strings seen so far for strings); what the standard keys make likely
//! (a vocabulary's scores and token types after its tokens) is added, and tensor infos not yet
//! reached are estimated from their count.

use binrw::io::Cursor;
use binrw::BinRead;
use ggufrw_schema::{
    detect, ArrayOf, ByteOrder, Ctx, FixedValue, GgufStringOf, Header, KeyValueOf, Spans,
    TensorInfoOf, ValueOf, ValueType, Width,
};

/// Bytes a tensor info is assumed to take before any has been seen: a 30-character name, four
/// dimensions, type and offset; real ones are 50–120 bytes.
const TENSOR_INFO_GUESS: u64 = 80;

/// The tokens array, and the arrays of one element per token that writers put after it
/// (llama.cpp's converter and gguf-py write them in this order).
const TOKENS: &str = "tokenizer.ggml.tokens";
const PER_TOKEN: [(&str, ValueType); 2] = [
    ("tokenizer.ggml.scores", ValueType::Float32),
    ("tokenizer.ggml.token_type", ValueType::Int32),
];

/// What the pairs read so far say about the ones to come.
#[derive(Default)]
struct Seen {
    tokens: Option<u64>,
    per_token: [bool; PER_TOKEN.len()],
}

impl Seen {
    fn note(&mut self, key: &[u8], count: Option<u64>) {
        if key == TOKENS.as_bytes() {
            self.tokens = count;
        }
        for (i, (name, _)) in PER_TOKEN.iter().enumerate() {
            self.per_token[i] |= key == name.as_bytes();
        }
    }

    /// Bytes of the per-token arrays not seen yet, if the tokens were, and if `pairs_left`
    /// pairs can hold them.
    fn likely_to_come(&self, pairs_left: u64, width: Width) -> u64 {
        let Some(n) = self.tokens else { return 0 };
        let missing = (PER_TOKEN.iter().zip(self.per_token)).filter(|(_, seen)| !seen);
        (missing.take(pairs_left as usize))
            .map(|((name, ty), _)| {
                // Key, type, element type, count, elements.
                let head = width.bytes() + name.len() as u64 + 4 + 4 + width.bytes();
                head.saturating_add(n.saturating_mul(ty.min_size(width)))
            })
            .fold(0, u64::saturating_add)
    }
}

/// The bytes of a string read as a span, if the prefix holds them.
fn text<'a>(prefix: &'a [u8], s: &GgufStringOf<Spans>) -> &'a [u8] {
    let (a, n) = (s.string.offset as usize, s.string.len as usize);
    prefix.get(a..a.saturating_add(n)).unwrap_or(&[])
}

/// Where the header of the file whose first bytes are `prefix` (the file being `len` bytes
/// long) probably ends, or `None` when the prefix does not say (it is too short to hold the
/// counts, or it ends in a nested array).
pub(crate) fn header_end(prefix: &[u8], len: u64) -> Option<u64> {
    let (_, byte_order, version) = detect(prefix.get(..8)?).ok()?;
    let ctx = Ctx::new(version, byte_order, len);
    let endian = byte_order.endian();
    let width = ctx.width();
    let (fixed, tensor_count, kv_count) = fixed_part(prefix, version, byte_order)?;
    let have = prefix.len() as u64;
    let mut cursor = Cursor::new(prefix);
    cursor.set_position(fixed);
    let mut seen = Seen::default();
    let tensors_guess = tensor_count.saturating_mul(TENSOR_INFO_GUESS);

    for i in 0..kv_count {
        let start = cursor.position();
        let pair = KeyValueOf::<Spans>::read_options(&mut cursor, endian, ctx);
        let pairs_left = kv_count - i - 1;
        // A numeric array is read as a span, without its bytes: it may end past the prefix.
        let end = match pair {
            Ok(pair) => {
                let count = match &pair.value {
                    ValueOf::Array(ArrayOf { values }) => Some(values.len() as u64),
                    _ => None,
                };
                seen.note(text(prefix, &pair.key), count);
                let end = cursor.position();
                if end <= have {
                    continue;
                }
                end
            }
            Err(_) => {
                cursor.set_position(start);
                cut_pair_end(&mut cursor, ctx, &mut seen)?
            }
        };
        let to_come = seen.likely_to_come(pairs_left, width);
        return Some(end.saturating_add(to_come).saturating_add(tensors_guess));
    }

    let infos_start = cursor.position();
    for read in 0..tensor_count {
        let start = cursor.position();
        let info = TensorInfoOf::<Spans>::read_options(&mut cursor, endian, ctx);
        if info.is_ok() && cursor.position() <= have {
            continue;
        }
        let each = if read == 0 {
            TENSOR_INFO_GUESS
        } else {
            (start - infos_start).div_ceil(read)
        };
        return Some(start.saturating_add((tensor_count - read).saturating_mul(each)));
    }
    // Everything is here but the padding.
    Some(cursor.position())
}

/// The fixed part's size and the two counts, as the schema lists the fixed fields.
fn fixed_part(prefix: &[u8], version: u32, byte_order: ByteOrder) -> Option<(u64, u64, u64)> {
    let width = Ctx::new(version, byte_order, 0).width();
    let (mut at, mut tensors, mut kvs) = (0u64, None, None);
    for field in Header::empty(version, byte_order).fixed_fields() {
        if let FixedValue::Number(_) = field.value {
            let bytes = prefix.get(at as usize..(at + field.size) as usize)?;
            let n = width.decode(bytes, byte_order.endian());
            match field.name {
                "tensor_count" => tensors = n,
                "metadata_kv_count" => kvs = n,
                _ => {}
            }
        }
        at += field.size;
    }
    Some((at, tensors?, kvs?))
}

/// The end of the pair starting at the cursor, which the prefix cuts: its key, its type, and
/// for a string or an array its length, read as far as the prefix goes.
fn cut_pair_end(cursor: &mut Cursor<&[u8]>, ctx: Ctx, seen: &mut Seen) -> Option<u64> {
    let endian = ctx.byte_order.endian();
    let width = ctx.width();
    let words = |cursor: &mut Cursor<&[u8]>| -> Option<u64> {
        let at = cursor.position() as usize;
        let bytes = cursor.get_ref().get(at..at + width.bytes() as usize)?;
        cursor.set_position((at as u64) + width.bytes());
        width.decode(bytes, endian)
    };
    let start = cursor.position();
    let Ok(key) = GgufStringOf::<Spans>::read_options(cursor, endian, ctx) else {
        // Cut inside the key: all that is known is its length.
        cursor.set_position(start);
        let len = words(cursor)?;
        return Some(cursor.position().saturating_add(len).saturating_add(4));
    };
    let ty = ValueType::read_options(cursor, endian, ()).ok()?;
    match ty {
        ValueType::String => {
            seen.note(text(cursor.get_ref(), &key), None);
            let len = words(cursor)?;
            Some(cursor.position().saturating_add(len))
        }
        ValueType::Array => {
            let element = ValueType::read_options(cursor, endian, ()).ok()?;
            let count = words(cursor)?;
            seen.note(text(cursor.get_ref(), &key), Some(count));
            let items_start = cursor.position();
            match element {
                ValueType::Array => None,
                ValueType::String => {
                    // The strings seen so far give the average length of the rest.
                    let mut strings = 0u64;
                    while strings < count
                        && GgufStringOf::<Spans>::read_options(cursor, endian, ctx).is_ok()
                    {
                        strings += 1;
                    }
                    let at = cursor.position();
                    let each = if strings == 0 {
                        width.bytes() + 8
                    } else {
                        (at - items_start).div_ceil(strings)
                    };
                    Some(at.saturating_add((count - strings).saturating_mul(each)))
                }
                number => {
                    let size = number.min_size(width);
                    Some(items_start.saturating_add(count.saturating_mul(size)))
                }
            }
        }
        scalar => Some(cursor.position().saturating_add(scalar.min_size(width))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Builder, GgmlType};

    fn file() -> Vec<u8> {
        let tokens: Vec<String> = (0..5000).map(|i| format!("token{i}")).collect();
        let mut b = Builder::new()
            .metadata("general.architecture", "llama")
            .metadata("tokenizer.ggml.tokens", tokens)
            .metadata("tokenizer.ggml.scores", vec![0.5f32; 5000]);
        for i in 0..300 {
            b = b
                .tensor(format!("blk.{i}.w"), GgmlType::F32, &[4], vec![0u8; 16])
                .unwrap();
        }
        b.build().unwrap().to_bytes().unwrap()
    }

    #[test]
    fn estimates_approach_the_header_end_from_every_prefix() {
        let bytes = file();
        let gguf = crate::Gguf::from_bytes(&bytes[..]).unwrap();
        let layout = gguf.layout();
        let end = layout.tensor_infos_end;
        let len = bytes.len() as u64;
        let middle = |a: u64, b: u64| (a + b) as usize / 2;
        // Cut in the tokens: the strings seen give the rest; the tensor infos are guessed.
        let infos = layout.tensor_info_offsets[0];
        let estimate = header_end_of(
            &bytes[..middle(layout.kv_offsets[1], layout.kv_offsets[2])],
            len,
        );
        let metadata_estimate = estimate - 300 * TENSOR_INFO_GUESS;
        assert!(
            metadata_estimate.abs_diff(infos) * 10 < infos,
            "metadata estimated to end at {metadata_estimate}, ends at {infos}"
        );
        assert!(estimate >= end, "estimate {estimate} short of {end}");
        // Cut in the scores: their end is exact, the tensor infos guessed.
        let estimate = header_end_of(&bytes[..middle(layout.kv_offsets[2], infos)], len);
        assert_eq!(estimate, infos + 300 * TENSOR_INFO_GUESS);
        // Cut in the tensor infos: from their own average.
        let cut = layout.tensor_info_offsets[150] as usize + 5;
        let estimate = header_end_of(&bytes[..cut], len);
        assert!(estimate.abs_diff(end) < 300, "{estimate} vs {end}");
        // Everything there.
        assert_eq!(header_end_of(&bytes[..end as usize], len), end);
        // Too short to say.
        assert_eq!(header_end(&bytes[..10], len), None);
    }

    fn header_end_of(prefix: &[u8], len: u64) -> u64 {
        header_end(prefix, len).expect("an estimate")
    }
}
