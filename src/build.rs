//! Building a file in code: metadata, tensors with their data, then bytes.

use crate::error::{Error, Result};
use crate::file::Gguf;
use crate::ggml_type::GgmlType;
use ggufrw_schema::{ByteOrder, GgufString, Header, KeyValue, TensorInfo, Value, ALIGNMENT_KEY};

/// Builds a GGUF file in memory with ggml's layout: tensor data contiguous in declaration
/// order, each tensor padded with zeros to the alignment.
///
/// ```
/// use ggufrw::{Builder, GgmlType};
/// let file = Builder::new()
///     .metadata("general.architecture", "llama")
///     .tensor("w", GgmlType::F32, &[2], 1.5f32.to_le_bytes().repeat(2))?
///     .build()?;
/// assert_eq!(file.tensor_data(0)?, &1.5f32.to_le_bytes().repeat(2)[..]);
/// # Ok::<(), ggufrw::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    header: Header,
    data: Vec<Vec<u8>>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// An empty version 3 little-endian file.
    pub fn new() -> Self {
        Builder {
            header: Header::new_v3(),
            data: Vec::new(),
        }
    }

    /// Sets the format version (1..=3; big-endian needs 2 or 3).
    pub fn version(mut self, version: u32) -> Self {
        self.header.version = version;
        self
    }

    /// Sets the byte order. Tensor data is taken as given: it must already be in this order.
    pub fn byte_order(mut self, byte_order: ByteOrder) -> Self {
        self.header.byte_order = byte_order;
        self
    }

    /// Sets `key` to `value`, replacing an earlier value in place, else appending.
    pub fn metadata(mut self, key: &str, value: impl Into<Value>) -> Self {
        let value = value.into();
        match self.header.metadata.iter_mut().find(|kv| kv.key == *key) {
            Some(kv) => kv.value = value,
            None => self.header.metadata.push(KeyValue::new(key, value)),
        }
        self
    }

    /// Sets `general.alignment`.
    pub fn alignment(self, alignment: u32) -> Self {
        self.metadata(ALIGNMENT_KEY, alignment)
    }

    /// Adds a tensor; `data` must be exactly the size its type and shape call for.
    pub fn tensor(
        mut self,
        name: &str,
        ggml_type: GgmlType,
        dimensions: &[u64],
        data: impl Into<Vec<u8>>,
    ) -> Result<Self> {
        let data = data.into();
        let size = ggml_type
            .byte_size(dimensions)
            .map_err(|e| Error::Invalid(format!("tensor {name}: {e}")))?;
        if data.len() as u64 != size {
            return Err(Error::Invalid(format!(
                "tensor {name}: {} bytes of data for a {ggml_type} tensor of shape {dimensions:?}, which takes {size}",
                data.len()
            )));
        }
        self.header.tensor_infos.push(TensorInfo {
            name: GgufString::from(name),
            dimensions: dimensions.to_vec(),
            ggml_type: ggml_type.id(),
            offset: 0,
        });
        self.data.push(data);
        Ok(self)
    }

    /// Lays out the tensors and encodes the file.
    pub fn build(mut self) -> Result<Gguf<Vec<u8>>> {
        let alignment = u64::from(self.header.alignment());
        let mut offset = 0u64;
        for (info, data) in self.header.tensor_infos.iter_mut().zip(&self.data) {
            info.offset = offset;
            offset = padded(offset, data.len() as u64, alignment)?;
        }
        self.header.pad()?;
        let mut bytes = self.header.encode(!self.data.is_empty())?;
        for data in &self.data {
            bytes.extend_from_slice(data);
            let end = padded(bytes.len() as u64, 0, alignment)?;
            bytes.resize(end as usize, 0);
        }
        Gguf::from_bytes(bytes)
    }
}

/// `offset + size` rounded up to `alignment`, checked.
fn padded(offset: u64, size: u64, alignment: u64) -> Result<u64> {
    offset
        .checked_add(size)
        .and_then(|end| end.checked_next_multiple_of(alignment))
        .ok_or_else(|| Error::Invalid("tensor data would pass 2^64 bytes".into()))
}
