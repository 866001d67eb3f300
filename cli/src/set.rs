//! `--set KEY=TYPE:VALUE`: values from text, refusing any that the type cannot hold exactly as
//! written (a float that would become infinite or zero, an integer out of range, an array
//! element of another JSON type than the array's).

use ggufrw::schema::{Array, Number, NumberKind, ValueTypeVisitor, Wide};
use ggufrw::{Value, ValueType};
use serde_json::Value as Json;
use std::fmt;
use std::str::FromStr;
use strum::IntoEnumIterator;

/// Why a value was refused.
#[derive(Debug)]
pub struct Refused(String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(why.into()))
}

/// The type names `--set` takes, for messages and its help.
pub(crate) fn known_types() -> String {
    let scalars: Vec<&str> = (ValueType::iter())
        .filter(|t| *t != ValueType::Array)
        .map(ValueType::name)
        .collect();
    format!("{}, array[TYPE]", scalars.join(", "))
}

fn value_type(name: &str) -> Result<ValueType, Refused> {
    match ValueType::from_str(name) {
        Ok(ValueType::Array) | Err(_) => refuse(format!(
            "unknown type {name:?}; the types are {}",
            known_types()
        )),
        Ok(t) => Ok(t),
    }
}

/// Parses `TYPE:VALUE` (`uint32:8192`, `string:Gemma`, `bool:true`, `float32:0.5`) or
/// `array[TYPE]:JSON_LIST` (`array[int32]:[1,2]`, `array[string]:["a","b"]`).
pub fn parse_value(text: &str) -> Result<Value, Refused> {
    let Some((ty, raw)) = text.split_once(':') else {
        return refuse(format!(
            "{text:?}: expected TYPE:VALUE, where TYPE is one of {}",
            known_types()
        ));
    };
    if let Some(element) = ty.strip_prefix("array[").and_then(|t| t.strip_suffix(']')) {
        let element = value_type(element)?;
        let list: Vec<Json> = serde_json::from_str(raw)
            .map_err(|e| Refused(format!("{raw:?} is not a JSON list: {e}")))?;
        return element.visit(FromJsonList(&list));
    }
    value_type(ty)?.visit(FromText(raw))
}

/// A number or bool of type `T` from its widened form, refusing what does not fit.
fn narrow<T: Number>(wide: Wide, text: &dyn fmt::Display) -> Result<T, Refused> {
    let ty = T::TYPE.name();
    let Some(v) = T::narrow(wide) else {
        return refuse(format!("{text} is not a {ty}"));
    };
    // A float that rounds to infinity or to zero is another number than the one written.
    if let (Wide::Float(was), Wide::Float(now)) = (wide, v.widen()) {
        if was.is_finite() && !now.is_finite() {
            return refuse(format!("{text} is too large for {ty}"));
        }
        if was != 0.0 && now == 0.0 {
            return refuse(format!(
                "{text} is too small for {ty}: it would be stored as 0"
            ));
        }
    }
    Ok(v)
}

/// The widened form of text for a type of the same kind as `T`.
fn wide_from_text<T: Number>(raw: &str) -> Result<Wide, Refused> {
    let raw = raw.trim();
    let bad = |e: &dyn fmt::Display| Refused(format!("{raw:?} is not a {}: {e}", T::TYPE.name()));
    Ok(match T::KIND {
        // Only `true` and `false`: a bool of another byte is for repairing, not for writing.
        NumberKind::Bool => Wide::Bool(raw.parse::<bool>().map_err(|e| bad(&e))?.into()),
        NumberKind::Unsigned => Wide::Unsigned(raw.parse().map_err(|e| bad(&e))?),
        NumberKind::Signed => Wide::Signed(raw.parse().map_err(|e| bad(&e))?),
        NumberKind::Float => Wide::Float(float_from_text(raw).map_err(|e| bad(&e))?),
    })
}

/// A float from text: the literals inf, -inf and nan as they are; any other text must be a
/// number that f64 holds without becoming infinite or zero.
fn float_from_text(raw: &str) -> Result<f64, String> {
    if let Some(v) = ggufrw::dump::non_finite_from_text(raw) {
        return Ok(v);
    }
    let v: f64 = raw.parse().map_err(|e| format!("{e}"))?;
    let literal = !raw.bytes().any(|b| b.is_ascii_digit());
    if literal {
        return Ok(v);
    }
    if !v.is_finite() {
        return Err("too large for float64".into());
    }
    let mantissa = raw.split(['e', 'E']).next().unwrap_or(raw);
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return Err("too small for float64: it would be stored as 0".into());
    }
    Ok(v)
}

/// One scalar from text.
struct FromText<'a>(&'a str);

impl ValueTypeVisitor for FromText<'_> {
    type Out = Result<Value, Refused>;
    fn number<T: Number>(self) -> Self::Out {
        let wide = wide_from_text::<T>(self.0)?;
        Ok(narrow::<T>(wide, &format!("{:?}", self.0.trim()))?.into_value())
    }
    fn string(self) -> Self::Out {
        Ok(Value::from(self.0))
    }
    fn array(self) -> Self::Out {
        refuse("arrays are written array[TYPE]:[…]")
    }
}

/// An array from a JSON list whose elements are all of the array's JSON type: numbers for
/// numbers (floats may also be the strings "inf", "-inf", "nan"), true/false for bools, strings
/// for strings.
struct FromJsonList<'a>(&'a [Json]);

impl ValueTypeVisitor for FromJsonList<'_> {
    type Out = Result<Value, Refused>;
    fn number<T: Number>(self) -> Self::Out {
        let ty = T::TYPE.name();
        let mut values = Vec::with_capacity(self.0.len());
        for (i, item) in self.0.iter().enumerate() {
            let element = |why: String| Refused(format!("element {i} ({item}): {why}"));
            let wide = match (T::KIND, item) {
                (NumberKind::Bool, Json::Bool(b)) => Wide::Bool((*b).into()),
                (NumberKind::Unsigned, Json::Number(n)) => match n.as_u64() {
                    Some(v) => Wide::Unsigned(v),
                    None => return Err(element(format!("not a {ty}"))),
                },
                (NumberKind::Signed, Json::Number(n)) => match n.as_i64() {
                    Some(v) => Wide::Signed(v),
                    None => return Err(element(format!("not a {ty}"))),
                },
                (NumberKind::Float, Json::Number(n)) => {
                    Wide::Float(float_from_text(&n.to_string()).map_err(element)?)
                }
                (NumberKind::Float, Json::String(s))
                    if ggufrw::dump::non_finite_from_text(s).is_some() =>
                {
                    Wide::Float(float_from_text(s).map_err(element)?)
                }
                _ => return Err(element(format!("not a {ty}"))),
            };
            values.push(narrow::<T>(wide, &format!("element {i} ({item})"))?);
        }
        Ok(Value::Array(Array::new(T::into_array(values))))
    }
    fn string(self) -> Self::Out {
        let mut strings = Vec::with_capacity(self.0.len());
        for (i, item) in self.0.iter().enumerate() {
            match item {
                Json::String(s) => strings.push(s.as_str()),
                other => return refuse(format!("element {i} ({other}): not a string")),
            }
        }
        Ok(Value::from(strings))
    }
    fn array(self) -> Self::Out {
        refuse("arrays of arrays cannot be set here")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_that_would_change_are_refused() {
        for bad in [
            "float32:1e40",
            "float32:1e-50",
            "float32:-3.5e38",
            "float64:1e400",
            "float64:1e-400",
            "array[float32]:[1, 1e40]",
            "array[float32]:[1e-50]",
        ] {
            assert!(parse_value(bad).is_err(), "{bad} was accepted");
        }
        assert_eq!(
            parse_value("float32:inf").unwrap(),
            Value::Float32(f32::INFINITY)
        );
        assert_eq!(
            parse_value("float32:-inf").unwrap(),
            Value::Float32(f32::NEG_INFINITY)
        );
        assert!(matches!(parse_value("float64:nan").unwrap(), Value::Float64(v) if v.is_nan()));
        assert_eq!(parse_value("float32:0").unwrap(), Value::Float32(0.0));
        assert_eq!(parse_value("float32:1e-40").unwrap(), Value::Float32(1e-40));
        assert_eq!(
            parse_value(r#"array[float32]:[0.5, "inf"]"#).unwrap(),
            Value::from(vec![0.5f32, f32::INFINITY])
        );
    }

    #[test]
    fn array_elements_must_be_of_the_arrays_type() {
        for bad in [
            r#"array[string]:["a",1]"#,
            "array[bool]:[1]",
            r#"array[int32]:["1"]"#,
            "array[uint8]:[256]",
            "array[uint8]:[-1]",
            "array[int8]:[1.5]",
            "uint8:256",
            "int8:-129",
            "bool:1",
            "bool:maybe",
            "uint32",
            "array[int32]:1,2",
            "array[array]:[]",
        ] {
            assert!(parse_value(bad).is_err(), "{bad} was accepted");
        }
        assert_eq!(
            parse_value(r#"array[string]:["a","b"]"#).unwrap(),
            Value::from(vec!["a", "b"])
        );
        assert_eq!(
            parse_value("array[bool]:[true,false]").unwrap(),
            Value::from(vec![true, false])
        );
        assert_eq!(
            parse_value("array[int64]:[-9223372036854775808]").unwrap(),
            Value::from(vec![i64::MIN])
        );
        assert_eq!(
            parse_value("uint64:18446744073709551615").unwrap(),
            Value::Uint64(u64::MAX)
        );
    }

    #[test]
    fn unknown_types_are_named_with_the_known_ones() {
        let e = parse_value("nosuchtype:1").unwrap_err().to_string();
        assert!(
            e.contains("uint8") && e.contains("float64") && e.contains("array[TYPE]"),
            "{e}"
        );
        let e = parse_value("array[nope]:[]").unwrap_err().to_string();
        assert!(e.contains("string"), "{e}");
    }
}
