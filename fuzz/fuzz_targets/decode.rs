//! `Gguf::from_bytes` on arbitrary bytes: no panic, no allocation out of proportion to the
//! input, no leak; a failure is a one-line `DecodeError` inside the input; a success has a
//! consistent layout and dumps as JSON and as text. The zero-copy decode (`Spans`) fails with
//! the same error, or succeeds with spans that hold exactly the owned model's strings and arrays.
#![no_main]

use ggufrw::schema::{
    decode_header, decode_header_as, ArrayValuesOf, Element, Header, HeaderOf, Number, Spans,
    ValueOf, ValueTypeVisitor, Width,
};
use ggufrw::{ArrayValues, Gguf, Value};
use ggufrw_fuzz::{check_decode_error, decode_allocation_bound, peak_of};
use std::io::Cursor;

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let len = data.len();
    let (result, peak) = peak_of(|| Gguf::from_bytes(data));
    assert!(
        peak <= decode_allocation_bound(len),
        "decoding {len} bytes allocated {peak} bytes at once (bound {})",
        decode_allocation_bound(len)
    );
    let spans = decode_header_as::<Spans, _>(&mut Cursor::new(data));
    let file = match result {
        Ok(file) => file,
        Err(e) => {
            let owned = decode_header(&mut Cursor::new(data));
            if let Err(owned) = owned {
                assert_eq!(spans.err(), Some(owned), "the span decode fails otherwise");
            }
            return check_decode_error(&e, len);
        }
    };
    let spans =
        spans.unwrap_or_else(|e| panic!("the span decode fails where the owned one does not: {e}"));
    spans_agree(file.header(), &spans, data);

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
    assert_eq!(
        Ok(layout),
        header.layout().as_ref(),
        "sizes and encoding place fields alike"
    );

    let json = ggufrw::dump::dump_json(&file).to_string();
    assert!(json.starts_with('{'));
    let text = ggufrw::dump::dump_text(&file);
    assert!(text.starts_with("GGUF v"));
}

/// Every span of `spans` holds what `owned` holds.
fn spans_agree(owned: &Header, spans: &HeaderOf<Spans>, data: &[u8]) {
    assert_eq!(owned.metadata.len(), spans.metadata.len());
    assert_eq!(owned.tensor_infos.len(), spans.tensor_infos.len());
    assert_eq!(owned.padding, spans.padding);
    let ctx = owned.ctx();
    let text = |offset: u64, len: u64| &data[offset as usize..(offset + len) as usize];
    for (o, s) in owned.metadata.iter().zip(&spans.metadata) {
        assert_eq!(
            o.key.as_bytes(),
            text(s.key.string.offset, s.key.string.len)
        );
        value_agrees(&o.value, &s.value, data, ctx);
    }
    for (o, s) in owned.tensor_infos.iter().zip(&spans.tensor_infos) {
        assert_eq!(
            o.name.as_bytes(),
            text(s.name.string.offset, s.name.string.len)
        );
        assert_eq!(
            (&o.dimensions[..], o.ggml_type, o.offset),
            (&s.dimensions[..], s.ggml_type, s.offset)
        );
    }
}

fn value_agrees(owned: &Value, spans: &ValueOf<Spans>, data: &[u8], ctx: ggufrw::schema::Ctx) {
    match (owned, spans) {
        (Value::String(o), ValueOf::String(s)) => {
            let span = s.string;
            assert_eq!(
                o.as_bytes(),
                &data[span.offset as usize..(span.offset + span.len) as usize]
            );
        }
        (Value::Array(o), ValueOf::Array(s)) => array_agrees(&o.values, &s.values, data, ctx),
        (o, s) => assert_eq!(format!("{o:?}"), format!("{s:?}")),
    }
}

fn array_agrees(
    owned: &ArrayValues,
    spans: &ArrayValuesOf<Spans>,
    data: &[u8],
    ctx: ggufrw::schema::Ctx,
) {
    assert_eq!(owned.element_type(), spans.element_type());
    /// The owned elements of each element type are the bytes their span covers.
    struct Agree<'x> {
        owned: &'x ArrayValues,
        spans: &'x ArrayValuesOf<Spans>,
        data: &'x [u8],
        ctx: ggufrw::schema::Ctx,
    }
    impl ValueTypeVisitor for Agree<'_> {
        type Out = ();
        fn number<T: Number>(self) {
            let (Some(o), Some(s)) = (T::of_array(self.owned), T::of_array(self.spans)) else {
                unreachable!("the element types are equal");
            };
            assert_eq!(o.len() as u64, s.count);
            let mut bytes = Vec::new();
            o.iter()
                .for_each(|v| v.encode(&mut bytes, self.ctx.byte_order.endian()));
            let start = s.offset as usize;
            assert_eq!(&bytes[..], &self.data[start..start + bytes.len()]);
        }
        fn string(self) {
            let (ArrayValues::String(o), ArrayValuesOf::String(s)) = (self.owned, self.spans)
            else {
                unreachable!("the element types are equal");
            };
            assert_eq!(o.len() as u64, s.count);
            let endian = self.ctx.byte_order.endian();
            let mut bytes = Vec::new();
            for string in o {
                let len = string.len() as u64;
                match self.ctx.width() {
                    Width::W32 => (len as u32).encode(&mut bytes, endian),
                    Width::W64 => len.encode(&mut bytes, endian),
                }
                bytes.extend_from_slice(string.as_bytes());
            }
            assert_eq!(bytes.len() as u64, s.bytes);
            assert_eq!(
                &bytes[..],
                &self.data[s.offset as usize..(s.offset + s.bytes) as usize]
            );
        }
        fn array(self) {
            let (ArrayValues::Array(o), ArrayValuesOf::Array(s)) = (self.owned, self.spans) else {
                unreachable!("the element types are equal");
            };
            assert_eq!(o.len(), s.len());
            for (o, s) in o.iter().zip(s) {
                array_agrees(&o.values, &s.values, self.data, self.ctx);
            }
        }
    }
    owned.element_type().visit(Agree {
        owned,
        spans,
        data,
        ctx,
    });
}
