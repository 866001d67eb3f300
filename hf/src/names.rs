//! Checkpoint tensor names to GGUF names: `gguf.TensorNameMap`, built from the generated
//! tables the same way (every block's names spelled out, a later entry replacing an earlier
//! one for the same checkpoint name).

use crate::tables::{ArchTable, Mapping, Tensor, BLOCK, GLOBAL};
use std::collections::HashMap;

impl ArchTable {
    /// The mappings outside the blocks for this architecture's tensors.
    pub fn global(&self) -> impl Iterator<Item = &'static Mapping> + '_ {
        GLOBAL.iter().filter(|m| self.tensors.contains(&m.tensor))
    }

    /// The block mappings for this architecture's tensors: `block_mappings_cfg` updated with
    /// the architecture's overrides as a dict is (a key replaced in place, a new one last).
    pub fn block(&self) -> Vec<&'static Mapping> {
        let mut list: Vec<&'static Mapping> = BLOCK.iter().collect();
        for o in self.block_overrides {
            match list.iter().position(|m| m.tensor == o.tensor) {
                Some(i) => list[i] = o,
                None => list.push(o),
            }
        }
        list.retain(|m| self.tensors.contains(&m.tensor));
        list
    }
}

/// The checkpoint-name map of one architecture with `n_blocks` blocks.
pub struct NameMap {
    map: HashMap<String, (Tensor, String)>,
}

impl NameMap {
    /// `gguf.get_tensor_name_map(arch, n_blocks)`.
    pub fn new(arch: &ArchTable, n_blocks: u64) -> NameMap {
        let mut map = HashMap::new();
        for m in arch.global() {
            let gguf = m.tensor.template().to_owned();
            map.insert(gguf.clone(), (m.tensor, gguf.clone()));
            for key in m.hf {
                map.insert((*key).to_owned(), (m.tensor, gguf.clone()));
            }
        }
        let block = arch.block();
        for bid in 0..n_blocks {
            let b = bid.to_string();
            for m in &block {
                let gguf = m.tensor.template().replace("{bid}", &b);
                map.insert(gguf.clone(), (m.tensor, gguf.clone()));
                for key in m.hf {
                    map.insert(key.replace("{bid}", &b), (m.tensor, gguf.clone()));
                }
            }
        }
        NameMap { map }
    }

    /// `get_type_and_name(key, try_suffixes)`.
    pub fn get(&self, key: &str, try_suffixes: &[&str]) -> Option<(Tensor, String)> {
        if let Some(found) = self.map.get(key) {
            return Some(found.clone());
        }
        for suffix in try_suffixes {
            if let Some(base) = key.strip_suffix(suffix) {
                if let Some((t, name)) = self.map.get(base) {
                    return Some((*t, format!("{name}{suffix}")));
                }
            }
        }
        None
    }

    /// `map_tensor_name(name)`: its GGUF name with `.weight` or `.bias` tried, or the
    /// reference's error.
    pub fn map_tensor_name(&self, name: &str) -> crate::error::Result<String> {
        self.get(name, &[".weight", ".bias"])
            .map(|(_, n)| n)
            .ok_or_else(|| crate::error::Error::reference(format!("Can not map tensor {name:?}")))
    }
}

/// `format_tensor_name(key, bid, suffix)` without the architecture check.
pub fn format_name(tensor: Tensor, bid: Option<u64>, suffix: &str) -> String {
    let t = tensor.template();
    let name = match bid {
        Some(b) => t.replace("{bid}", &b.to_string()),
        None => t.to_owned(),
    };
    format!("{name}{suffix}")
}

/// `match_model_tensor_name(name, key, bid)` with the default `.weight` suffix.
pub fn matches(arch: &ArchTable, name: &str, tensor: Tensor, bid: Option<u64>) -> bool {
    if !arch.tensors.contains(&tensor) {
        return false;
    }
    let t = tensor.template();
    let full = if t.contains("{bid}") {
        match bid {
            Some(b) => t.replace("{bid}", &b.to_string()),
            None => return false,
        }
    } else {
        if bid.is_some() {
            return false;
        }
        t.to_owned()
    };
    name.len() == full.len() + ".weight".len()
        && name.starts_with(&full)
        && name.ends_with(".weight")
}
