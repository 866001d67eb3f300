//! `gguf_string_t`: a length, then that many bytes of UTF-8, no NUL.

use crate::ctx::{read_count, Ctx, Word};
use crate::repr::{Owned, Repr};
use binrw::error::ContextExt;
use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};
use std::fmt;

/// A GGUF string: `len` (u32 in version 1, u64 after) and UTF-8 bytes, held as `R` holds
/// strings: a `String` ([`Owned`]) or a span of the input ([`crate::Spans`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GgufStringOf<H: Repr> {
    /// The text, or where it lies.
    pub string: H::Str,
}

/// A string of the owned model.
pub type GgufString = GgufStringOf<Owned>;

impl<H: Repr> GgufStringOf<H> {
    /// Bytes of text.
    pub fn byte_len(&self) -> u64 {
        H::str_len(&self.string)
    }
}

impl<H: Repr> BinRead for GgufStringOf<H> {
    type Args<'a> = Ctx;

    fn read_options<Rd: Read + Seek>(reader: &mut Rd, endian: Endian, ctx: Ctx) -> BinResult<Self> {
        let len = read_count(reader, endian, (ctx, 1)).map_err(|e| e.with_message("len"))?;
        let string = H::read_str(reader, len.get()).map_err(|e| e.with_message("string"))?;
        Ok(GgufStringOf { string })
    }
}

impl<H: Repr> BinWrite for GgufStringOf<H> {
    type Args<'a> = Ctx;

    fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, ctx: Ctx) -> BinResult<()> {
        let len = Word::narrow(self.byte_len(), ctx).map_err(|e| e.into_binrw(w))?;
        len.write_options(w, endian, ())?;
        H::write_str(&self.string, w)
    }
}

impl GgufString {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.string
    }
}

impl From<&str> for GgufString {
    fn from(s: &str) -> Self {
        GgufString {
            string: s.to_owned(),
        }
    }
}

impl From<String> for GgufString {
    fn from(string: String) -> Self {
        GgufString { string }
    }
}

impl std::ops::Deref for GgufString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.string
    }
}

impl AsRef<str> for GgufString {
    fn as_ref(&self) -> &str {
        &self.string
    }
}

impl PartialEq<str> for GgufString {
    fn eq(&self, other: &str) -> bool {
        self.string == other
    }
}

impl fmt::Display for GgufString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.string)
    }
}

/// The strings of an array in the owned model, packed: one buffer of text and where each
/// string ends, instead of an allocation per string (a vocabulary holds 100,000s of them).
/// Every string in it is UTF-8: [`StrList::push`] takes `&str`, and the decoder checks what it
/// adds; [`StrList::get`] checks again when handing a string out (cheap, and no `unsafe`).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StrList {
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl StrList {
    /// No strings.
    pub fn new() -> Self {
        StrList::default()
    }

    /// Room for `strings` strings of `bytes` bytes in all.
    pub fn with_capacity(strings: usize, bytes: usize) -> Self {
        StrList {
            text: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(strings),
        }
    }

    /// Appends a string.
    pub fn push(&mut self, s: &str) {
        self.push_checked(s.as_bytes());
    }

    /// Appends bytes the caller has checked to be UTF-8.
    pub(crate) fn push_checked(&mut self, utf8: &[u8]) {
        self.text.extend_from_slice(utf8);
        self.ends.push(self.text.len());
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `i`.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        simdutf8::basic::from_utf8(self.text.get(start..end)?).ok()
    }

    /// The strings in order.
    pub fn iter(&self) -> StrListIter<'_> {
        StrListIter {
            list: self,
            next: 0,
        }
    }

    /// Each string's bytes, unchecked (they are UTF-8): for writing, which needs no `&str`.
    pub(crate) fn iter_bytes(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start..end])
    }

    /// Bytes of text in all, lengths not counted.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }
}

/// The strings of a [`StrList`], in order.
#[derive(Clone, Debug)]
pub struct StrListIter<'a> {
    list: &'a StrList,
    next: usize,
}

impl<'a> Iterator for StrListIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let s = self.list.get(self.next)?;
        self.next += 1;
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.list.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for StrListIter<'_> {}

impl<'a> IntoIterator for &'a StrList {
    type Item = &'a str;
    type IntoIter = StrListIter<'a>;
    fn into_iter(self) -> StrListIter<'a> {
        self.iter()
    }
}

impl<S: AsRef<str>> FromIterator<S> for StrList {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut list = StrList::new();
        for s in iter {
            list.push(s.as_ref());
        }
        list
    }
}

impl fmt::Debug for StrList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
