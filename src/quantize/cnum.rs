//! C's number parsing, as llama.cpp reads the numbers of its command line (`atol`, `atof`,
//! `std::stoi`): one scanner of blanks, sign and digits under the three.

/// C's number scanning, as llama.cpp's command line reads numbers: the text after C's blanks
/// (`isspace`).
fn c_blanks_skipped(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r'])
}

/// The sign and the run of decimal digits that C's integer parsers read after the blanks.
fn c_sign_digits(s: &str) -> (bool, &str) {
    let s = c_blanks_skipped(s);
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let end = rest.bytes().take_while(u8::is_ascii_digit).count();
    (negative, &rest[..end])
}

/// C's `atol`: the rest ignored; 0 where there are no digits (saturating on overflow, where
/// C's result is undefined).
pub(crate) fn c_atol(s: &str) -> i64 {
    let (negative, digits) = c_sign_digits(s);
    let v = (digits.bytes()).fold(0i64, |v, b| {
        v.saturating_mul(10).saturating_add(i64::from(b - b'0'))
    });
    if negative {
        -v
    } else {
        v
    }
}

/// C's `atof` for the forms people write (decimal, exponent, inf, nan): the longest prefix
/// that parses; 0 where none does.
pub(crate) fn c_atof(s: &str) -> f64 {
    let s = c_blanks_skipped(s);
    (1..=s.len())
        .rev()
        .filter(|&n| s.is_char_boundary(n))
        .find_map(|n| s[..n].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// C++'s `std::stoi`, as llama-quantize reads the numbers on its command line (a preset's id,
/// layer ids, the thread count): the rest ignored; `None` where it throws (no digits, out of
/// `int`'s range).
pub(crate) fn stoi(text: &str) -> Option<i64> {
    let (negative, digits) = c_sign_digits(text);
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for b in digits.bytes() {
        value = value.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        if value > i64::from(i32::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    i32::try_from(value).ok().map(i64::from)
}
