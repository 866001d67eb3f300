//! Limits the decoder enforces, so that no input can exhaust the stack.

/// Deepest nesting of arrays inside arrays that decodes (an array of scalars has depth 1).
/// ggml refuses any nesting; gguf-py has no limit and overflows its stack on deep input.
pub const MAX_ARRAY_DEPTH: u8 = 32;

/// Most dimensions a tensor can have (`GGML_MAX_DIMS`); 0 is a scalar.
pub const MAX_DIMS: u32 = 4;
