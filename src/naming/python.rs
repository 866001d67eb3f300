//! Python's own string and number semantics, which gguf-py's naming convention and size labels
//! are defined in: what differs from Rust's (white space, Unicode version, float formatting) is
//! done here as Python 3.11 does it, and checked against Python by the tests.

/// Python's `str.strip()`: Unicode white space, and also U+001C..U+001F, which Python counts
/// as white space and Rust does not.
pub fn strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Characters Python 3.11 (Unicode 14.0) does not upper-case but newer Unicode, and so Rust's
/// `to_uppercase`, does: capitals added in Unicode 16.0 and 17.0 for older small letters, and
/// cased scripts added since.
const UPPER_SINCE_UNICODE_14: &[(char, char)] = &[
    ('\u{19b}', '\u{19b}'),
    ('\u{264}', '\u{264}'),
    ('\u{1c8a}', '\u{1c8a}'),
    ('\u{a7cd}', '\u{a7cd}'),
    ('\u{a7cf}', '\u{a7cf}'),
    ('\u{a7d3}', '\u{a7d3}'),
    ('\u{a7d5}', '\u{a7d5}'),
    ('\u{a7db}', '\u{a7db}'),
    ('\u{10d70}', '\u{10d85}'),
    ('\u{16ebb}', '\u{16ed3}'),
];

/// Python 3.11's `str.upper()`: full Unicode upper-casing (`ß` → `SS`) as of Unicode 14.0.
pub fn upper(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if UPPER_SINCE_UNICODE_14
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&c))
        {
            out.push(c);
        } else {
            out.extend(c.to_uppercase());
        }
    }
    out
}

/// Python's `f"{x:.{decimals}f}"` for a finite, non-negative `x`: the exact decimal value of
/// the double, rounded to `decimals` places, ties to even.
pub fn format_fixed(x: f64, decimals: usize) -> String {
    // Every finite double has at most 1074 decimals, so this is its exact value.
    let exact = format!("{x:.1100}");
    let (int_part, frac_part) = exact.split_once('.').unwrap_or((&exact, ""));
    let mut digits: Vec<u8> = int_part.bytes().collect();
    let int_len = digits.len();
    digits.extend(frac_part.bytes().take(decimals));
    digits.resize(int_len + decimals, b'0');
    let rest = frac_part.as_bytes().get(decimals..).unwrap_or(&[]);
    let round_up = match rest.first() {
        Some(b'6'..=b'9') => true,
        Some(b'5') => {
            let beyond_half = rest[1..].iter().any(|&d| d != b'0');
            let last_odd = digits.last().is_some_and(|d| (d - b'0') % 2 == 1);
            beyond_half || last_odd
        }
        _ => false,
    };
    if round_up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let int_len = digits.len() - decimals;
    let mut out = String::from_utf8(digits[..int_len].to_vec()).expect("ASCII digits");
    if decimals > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&digits[int_len..]).expect("ASCII digits"));
    }
    out
}
