//! ggufrw's ggml type table against ggml's, as ggml itself gave it: `tests/snapshots/
//! ggml_types.tsv` is written only by the ggml peer's test (`GGUFRW_BLESS=1 cargo test --test
//! integration peer_ggml::the_type_table_is_ggmls`, which also compares the table with ggml's live), so that a
//! wrong block size or a type ggml does not have fails here too, where ggml is not built.

use ggufrw::quant::RETIRED_TYPES;
use ggufrw::GgmlType;
use strum::IntoEnumIterator;

/// One row of ggml's table.
struct Row {
    id: u32,
    name: String,
    block: u64,
    bytes: u64,
    quantized: bool,
}

fn ggmls_table() -> Vec<Row> {
    let text = include_str!("snapshots/ggml_types.tsv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next().map(|l| format!("{l}\n")).as_deref(),
        Some(ggufrw_conform::ggml::TYPE_TABLE_HEADING)
    );
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            assert_eq!(cells.len(), 5, "{line:?}");
            Row {
                id: cells[0].parse().expect("id"),
                name: cells[1].to_owned(),
                block: cells[2].parse().expect("block"),
                bytes: cells[3].parse().expect("bytes"),
                quantized: cells[4].parse().expect("quantized"),
            }
        })
        .collect()
}

#[test]
fn every_type_is_ggmls_row_and_every_ggml_type_is_known() {
    let table = ggmls_table();
    for (i, row) in table.iter().enumerate() {
        assert_eq!(row.id as usize, i, "ggml's ids run from 0 without gaps");
        match GgmlType::from_id(row.id) {
            Some(t) => assert_eq!(
                (t.name(), t.block_size(), t.type_size(), t.is_quantized()),
                (row.name.as_str(), row.block, row.bytes, row.quantized),
                "type {}: ggufrw's row (name, block, bytes, quantized), then ggml's",
                row.id
            ),
            None => assert!(
                row.block == 0 && RETIRED_TYPES.iter().any(|(id, _)| *id == row.id),
                "ggml has type {} ({}), ggufrw does not",
                row.id,
                row.name
            ),
        }
    }
    assert_eq!(
        ggufrw::validate::GGML_TYPE_COUNT as usize,
        table.len(),
        "the ggml profile's count of ggml's types"
    );
    for t in GgmlType::iter() {
        assert!(
            (t.id() as usize) < table.len(),
            "ggufrw has {t} (id {}), which ggml's table does not: ggml first",
            t.id()
        );
    }
}
