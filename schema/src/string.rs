//! `gguf_string_t`: a length, then that many bytes. The spec asks for UTF-8; ggml reads any
//! bytes, so the decoder keeps them as they are and says whether they are UTF-8: the checked
//! text by default ([`Text::as_str`], a `Result`), the bytes when asked ([`Text::as_bytes`]).

use crate::ctx::{read_count, Ctx, Word};
use crate::repr::{Owned, Repr};
use binrw::error::ContextExt;
use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};
use std::cmp::Ordering;
use std::fmt;

/// Why a string's bytes are not text: the first `valid_up_to` bytes are UTF-8, the next is
/// where it stops being.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NotUtf8 {
    /// Bytes from the string's start that are valid UTF-8.
    pub valid_up_to: usize,
}

impl fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not valid UTF-8 from byte {}", self.valid_up_to)
    }
}

impl std::error::Error for NotUtf8 {}

/// Checks `bytes`: the fast check first, the one that says where only on failure.
fn check(bytes: &[u8]) -> Result<&str, NotUtf8> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(_) => match simdutf8::compat::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(NotUtf8 {
                valid_up_to: e.valid_up_to(),
            }),
        },
    }
}

/// Writes bytes as text, each byte of a sequence that is not UTF-8 as `\xNN`.
fn write_escaped(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for chunk in bytes.utf8_chunks() {
        f.write_str(chunk.valid())?;
        for b in chunk.invalid() {
            write!(f, "\\x{b:02x}")?;
        }
    }
    Ok(())
}

/// The bytes of a string, owned, and whether they are UTF-8 (decided once, when it is made).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Text(TextInner);

#[derive(Clone, PartialEq, Eq, Hash)]
enum TextInner {
    Utf8(String),
    // Never valid UTF-8: the constructors check.
    Bytes(Vec<u8>, NotUtf8),
}

impl Text {
    /// These bytes, UTF-8 or not.
    pub fn from_bytes(bytes: Vec<u8>) -> Text {
        match String::from_utf8(bytes) {
            Ok(s) => Text(TextInner::Utf8(s)),
            Err(e) => {
                let why = NotUtf8 {
                    valid_up_to: e.utf8_error().valid_up_to(),
                };
                Text(TextInner::Bytes(e.into_bytes(), why))
            }
        }
    }

    /// The text, or why the bytes are not text.
    pub fn as_str(&self) -> Result<&str, NotUtf8> {
        match &self.0 {
            TextInner::Utf8(s) => Ok(s),
            TextInner::Bytes(_, why) => Err(*why),
        }
    }

    /// The bytes as stored.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            TextInner::Utf8(s) => s.as_bytes(),
            TextInner::Bytes(b, _) => b,
        }
    }

    /// The bytes, given up.
    pub fn into_bytes(self) -> Vec<u8> {
        match self.0 {
            TextInner::Utf8(s) => s.into_bytes(),
            TextInner::Bytes(b, _) => b,
        }
    }

    /// Whether the bytes are UTF-8.
    pub fn is_utf8(&self) -> bool {
        matches!(self.0, TextInner::Utf8(_))
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Borrowed.
    pub fn text_ref(&self) -> TextRef<'_> {
        TextRef(match &self.0 {
            TextInner::Utf8(s) => RefInner::Utf8(s),
            TextInner::Bytes(b, why) => RefInner::Bytes(b, *why),
        })
    }
}

impl AsRef<[u8]> for Text {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Default for Text {
    fn default() -> Self {
        Text(TextInner::Utf8(String::new()))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text(TextInner::Utf8(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(TextInner::Utf8(s.to_owned()))
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

// By bytes, as ggml compares keys.
impl Ord for Text {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.text_ref().fmt(f)
    }
}

/// The text, with each byte that is not UTF-8 as `\xNN` (for people: it does not round-trip).
impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(self.as_bytes(), f)
    }
}

/// The bytes of a string, borrowed, and whether they are UTF-8 (decided when it is made).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TextRef<'a>(RefInner<'a>);

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum RefInner<'a> {
    Utf8(&'a str),
    // Never valid UTF-8: the constructors check.
    Bytes(&'a [u8], NotUtf8),
}

impl<'a> TextRef<'a> {
    /// These bytes, checked once.
    pub fn new(bytes: &'a [u8]) -> TextRef<'a> {
        TextRef(match check(bytes) {
            Ok(s) => RefInner::Utf8(s),
            Err(why) => RefInner::Bytes(bytes, why),
        })
    }

    /// The text, or why the bytes are not text.
    pub fn as_str(self) -> Result<&'a str, NotUtf8> {
        match self.0 {
            RefInner::Utf8(s) => Ok(s),
            RefInner::Bytes(_, why) => Err(why),
        }
    }

    /// The bytes as stored.
    pub fn as_bytes(self) -> &'a [u8] {
        match self.0 {
            RefInner::Utf8(s) => s.as_bytes(),
            RefInner::Bytes(b, _) => b,
        }
    }

    /// Whether the bytes are UTF-8.
    pub fn is_utf8(self) -> bool {
        matches!(self.0, RefInner::Utf8(_))
    }

    /// Bytes.
    pub fn len(self) -> usize {
        self.as_bytes().len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Copied.
    pub fn to_text(self) -> Text {
        Text(match self.0 {
            RefInner::Utf8(s) => TextInner::Utf8(s.to_owned()),
            RefInner::Bytes(b, why) => TextInner::Bytes(b.to_vec(), why),
        })
    }
}

impl AsRef<[u8]> for TextRef<'_> {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<'a> From<&'a str> for TextRef<'a> {
    fn from(s: &'a str) -> Self {
        TextRef(RefInner::Utf8(s))
    }
}

impl<'a> From<&'a Text> for TextRef<'a> {
    fn from(t: &'a Text) -> Self {
        t.text_ref()
    }
}

impl PartialEq<str> for TextRef<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for TextRef<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialOrd for TextRef<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TextRef<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// Text as a Rust string literal, bytes that are not UTF-8 as a byte string (`b"…"`).
impl fmt::Debug for TextRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            RefInner::Utf8(s) => fmt::Debug::fmt(s, f),
            RefInner::Bytes(b, _) => write!(f, "b\"{}\"", b.escape_ascii()),
        }
    }
}

/// The text, with each byte that is not UTF-8 as `\xNN` (for people: it does not round-trip).
impl fmt::Display for TextRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(self.as_bytes(), f)
    }
}

/// A GGUF string: `len` (u32 in version 1, u64 after) and the bytes, held as `R` holds
/// strings: [`Text`] ([`Owned`]) or a span of the input ([`crate::Spans`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GgufStringOf<H: Repr> {
    /// The bytes, or where they lie.
    pub string: H::Str,
}

/// A string of the owned model.
pub type GgufString = GgufStringOf<Owned>;

impl<H: Repr> GgufStringOf<H> {
    /// Bytes of the string.
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
    /// A string of these bytes, UTF-8 or not.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        GgufString {
            string: Text::from_bytes(bytes),
        }
    }

    /// The text, or why the bytes are not text.
    pub fn as_str(&self) -> Result<&str, NotUtf8> {
        self.string.as_str()
    }

    /// The bytes as stored.
    pub fn as_bytes(&self) -> &[u8] {
        self.string.as_bytes()
    }

    /// Whether the bytes are UTF-8.
    pub fn is_utf8(&self) -> bool {
        self.string.is_utf8()
    }

    /// Borrowed.
    pub fn text_ref(&self) -> TextRef<'_> {
        self.string.text_ref()
    }
}

impl AsRef<[u8]> for GgufString {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&str> for GgufString {
    fn from(s: &str) -> Self {
        GgufString { string: s.into() }
    }
}

impl From<String> for GgufString {
    fn from(string: String) -> Self {
        GgufString {
            string: string.into(),
        }
    }
}

impl From<&String> for GgufString {
    fn from(s: &String) -> Self {
        GgufString::from(s.as_str())
    }
}

impl From<&GgufString> for GgufString {
    fn from(s: &GgufString) -> Self {
        s.clone()
    }
}

impl From<Text> for GgufString {
    fn from(string: Text) -> Self {
        GgufString { string }
    }
}

impl From<TextRef<'_>> for GgufString {
    fn from(text: TextRef<'_>) -> Self {
        GgufString {
            string: text.to_text(),
        }
    }
}

impl PartialEq<str> for GgufString {
    fn eq(&self, other: &str) -> bool {
        self.string == *other
    }
}

impl PartialEq<&str> for GgufString {
    fn eq(&self, other: &&str) -> bool {
        self.string == **other
    }
}

/// The text, with each byte that is not UTF-8 as `\xNN`.
impl fmt::Display for GgufString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.string, f)
    }
}

/// The strings of an array in the owned model, packed: one buffer of text and where each
/// string ends, instead of an allocation per string (a vocabulary holds 100,000s of them).
/// Strings are held as bytes, UTF-8 or not; [`StrList::get`] checks each when handing it out
/// (cheap, and no `unsafe`).
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
        self.push_bytes(s.as_bytes());
    }

    /// Appends a string's bytes, UTF-8 or not.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
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
    pub fn get(&self, i: usize) -> Option<TextRef<'_>> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(TextRef::new(self.text.get(start..end)?))
    }

    /// The strings in order.
    pub fn iter(&self) -> StrListIter<'_> {
        StrListIter {
            list: self,
            next: 0,
        }
    }

    /// Each string's bytes, unchecked: for writing, which needs no text.
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
    type Item = TextRef<'a>;

    fn next(&mut self) -> Option<TextRef<'a>> {
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
    type Item = TextRef<'a>;
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

impl<'a> FromIterator<TextRef<'a>> for StrList {
    fn from_iter<I: IntoIterator<Item = TextRef<'a>>>(iter: I) -> Self {
        let mut list = StrList::new();
        for s in iter {
            list.push_bytes(s.as_bytes());
        }
        list
    }
}

impl fmt::Debug for StrList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
