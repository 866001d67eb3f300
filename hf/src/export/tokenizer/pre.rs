//! Which of llama.cpp's BPE pre-tokenizers a `tokenizer.json` can say exactly.

use super::pre_tables::{PreName, PreType, CUSTOM_SPLITS, PRE_NAMES, PRE_TYPES};

/// The functions of llama.cpp's src/unicode.cpp that split exactly as their expression does
/// under Oniguruma (the others, Kimi-K2's and AFMoE's digit grouping, are code of their own).
const FAITHFUL_CUSTOM: &[&str] = &[
    "unicode_regex_split_custom_gpt2",
    "unicode_regex_split_custom_llama3",
    "unicode_regex_split_custom_qwen2",
    "unicode_regex_split_custom_qwen35",
    "unicode_regex_split_custom_newlines",
];

/// What a pre-tokenizer name resolves to.
pub(super) struct Pre {
    pub name: &'static PreName,
    pub ty: &'static PreType,
}

/// The pre-tokenizer of `name`, or why it cannot be written exactly.
pub(super) fn resolve(name: &str) -> Result<Pre, String> {
    let pn = PRE_NAMES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("pre-tokenizer '{name}' is unknown to llama.cpp"))?;
    let ty = PRE_TYPES
        .iter()
        .find(|t| t.name == pn.pre_type)
        .ok_or_else(|| format!("pre type {} has no expressions", pn.pre_type))?;
    for re in ty.regexes {
        if let Some((_, f)) = CUSTOM_SPLITS.iter().find(|(e, _)| e == re) {
            if !FAITHFUL_CUSTOM.contains(f) {
                return Err(format!(
                    "pre-tokenizer '{name}' splits by llama.cpp's own code ({f}), which no \
                     regular expression reproduces"
                ));
            }
            continue;
        }
        // llama.cpp runs these on text whose non-ASCII code points are collapsed to one per
        // general category, so \p{Lu} and its kin stand for every letter there; Oniguruma
        // would tell them apart.
        for class in ["\\p{Lu}", "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"] {
            if re.contains(class) {
                return Err(format!(
                    "pre-tokenizer '{name}' uses {class}, which llama.cpp reads as any letter"
                ));
            }
        }
        // Expressions that can match nothing split differently under std::regex.
        if re.starts_with("(?=") {
            return Err(format!(
                "pre-tokenizer '{name}' has an expression that matches the empty string"
            ));
        }
    }
    Ok(Pre { name: pn, ty })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::pre_tokenizers::PreTokenizerWrapper;
    use tokenizers::{OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer};

    /// Every pre-tokenizer written compiles under Oniguruma and splits text; the ones llama.cpp
    /// splits by code of its own, or reads differently, are refused by name.
    #[test]
    fn accepted_ones_compile_and_the_rest_are_refused() {
        let mut refused = Vec::new();
        for p in PRE_NAMES {
            match resolve(p.name) {
                Ok(pre) => {
                    let splits: Vec<_> = pre
                        .ty
                        .regexes
                        .iter()
                        .map(|r| {
                            serde_json::json!({"type": "Split", "pattern": {"Regex": r},
                                               "behavior": "Isolated", "invert": false})
                        })
                        .collect();
                    let json = serde_json::json!({"type": "Sequence", "pretokenizers": splits});
                    let tok: PreTokenizerWrapper =
                        serde_json::from_value(json).unwrap_or_else(|e| panic!("{}: {e}", p.name));
                    let mut s = PreTokenizedString::from("Hello world's 1234 ½ 我想 ok\n\n");
                    tok.pre_tokenize(&mut s).unwrap();
                    let pieces = s.get_splits(OffsetReferential::Original, OffsetType::Char);
                    let joined: String = pieces.iter().map(|(t, _, _)| *t).collect();
                    assert_eq!(joined, "Hello world's 1234 ½ 我想 ok\n\n", "{}", p.name);
                }
                Err(e) => {
                    assert!(e.contains(&format!("'{}'", p.name)), "{e}");
                    refused.push(p.name);
                }
            }
        }
        for name in ["kimi-k2", "youtu", "superbpe", "tiny_aya"] {
            if PRE_NAMES.iter().any(|p| p.name == name) {
                assert!(refused.contains(&name), "{name} is not refused");
            }
        }
        for name in ["llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "gemma4", ""] {
            assert!(!refused.contains(&name), "{name} is refused");
        }
        assert!(resolve("no-such-pre").is_err());
    }
}
