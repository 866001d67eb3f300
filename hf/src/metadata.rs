//! `general.*` as `gguf.Metadata` derives it: from `config.json`'s `_name_or_path`, the folder
//! name, `generation_config.json`'s sampling settings and a `--metadata` JSON override, with
//! the reference's name heuristics (`get_model_id_components`, `id_to_title`).

use crate::error::{Error, Result};
use crate::kv::Kv;
use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::sync::LazyLock;

/// The authorship and sampling metadata, each field as `gguf.Metadata` has it.
#[derive(Default, Debug, Clone)]
pub struct Metadata {
    /// `general.name`.
    pub name: Option<String>,
    /// `general.author`.
    pub author: Option<String>,
    /// `general.version`.
    pub version: Option<String>,
    /// `general.organization`.
    pub organization: Option<String>,
    /// `general.finetune`.
    pub finetune: Option<String>,
    /// `general.basename`.
    pub basename: Option<String>,
    /// `general.description`.
    pub description: Option<String>,
    /// `general.quantized_by`.
    pub quantized_by: Option<String>,
    /// `general.size_label`.
    pub size_label: Option<String>,
    /// The other string fields, `(key, value)` in `set_gguf_meta_model`'s order once set.
    strings: Vec<(&'static str, String)>,
    /// `general.tags`.
    pub tags: Option<Vec<String>>,
    /// `general.languages`.
    pub languages: Option<Vec<String>>,
    sampling: Vec<(&'static str, Sampling)>,
}

#[derive(Debug, Clone)]
enum Sampling {
    Str(String),
    Int(i32),
    Float(f64),
}

/// Sampling settings: (generation_config key, GGUF key, is an integer).
const SAMPLING: [(&str, &str, Option<bool>); 12] = [
    ("sequence", "general.sampling.sequence", None),
    ("top_k", "general.sampling.top_k", Some(true)),
    ("top_p", "general.sampling.top_p", Some(false)),
    ("min_p", "general.sampling.min_p", Some(false)),
    (
        "xtc_probability",
        "general.sampling.xtc_probability",
        Some(false),
    ),
    (
        "xtc_threshold",
        "general.sampling.xtc_threshold",
        Some(false),
    ),
    ("temperature", "general.sampling.temp", Some(false)),
    (
        "penalty_last_n",
        "general.sampling.penalty_last_n",
        Some(true),
    ),
    (
        "penalty_repeat",
        "general.sampling.penalty_repeat",
        Some(false),
    ),
    ("mirostat", "general.sampling.mirostat", Some(true)),
    ("mirostat_tau", "general.sampling.mirostat_tau", Some(false)),
    ("mirostat_eta", "general.sampling.mirostat_eta", Some(false)),
];

/// String fields after the size label, in `set_gguf_meta_model`'s order.
const LATER_STRINGS: [&str; 11] = [
    "general.license",
    "general.license.name",
    "general.license.link",
    "general.url",
    "general.doi",
    "general.uuid",
    "general.repo_url",
    "general.source.url",
    "general.source.doi",
    "general.source.uuid",
    "general.source.repo_url",
];

fn sampling_value(
    v: &Value,
    integer: Option<bool>,
    path: &Path,
    key: &str,
) -> Result<Option<Sampling>> {
    let bad = || Error::field(path, key, format!("{v} is not of the type the key takes"));
    Ok(match (v, integer) {
        (Value::Null, _) => None,
        (Value::String(s), None) => Some(Sampling::Str(s.clone())),
        (Value::Number(n), Some(true)) => Some(Sampling::Int(
            n.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(bad)?,
        )),
        (Value::Number(n), Some(false)) => Some(Sampling::Float(n.as_f64().ok_or_else(bad)?)),
        (Value::Bool(b), Some(_)) => Some(Sampling::Int(i32::from(*b))),
        _ => return Err(bad()),
    })
}

impl Metadata {
    fn set_sampling(&mut self, key: &'static str, value: Option<Sampling>) {
        if let Some(v) = value {
            match self.sampling.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = v,
                None => self.sampling.push((key, v)),
            }
        }
    }

    fn set_string(&mut self, key: &'static str, value: String) {
        match self.strings.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.strings.push((key, value)),
        }
    }

    /// `Metadata.load(override, dir, model_name, total_params)`.
    pub fn load(
        override_path: Option<&Path>,
        dir: &Path,
        model_name: Option<&str>,
        total_params: i128,
    ) -> Result<Metadata> {
        let mut m = Metadata::default();
        check_model_card(dir)?;
        let config_path = dir.join("config.json");
        let hf_params = if config_path.is_file() {
            Some(crate::read_json(&config_path)?)
        } else {
            None
        };
        // The folder's own name, else `_name_or_path` if it names a model, fill what is unset.
        if let Some(id) = hf_params
            .as_ref()
            .and_then(|p| p.get("_name_or_path"))
            .and_then(Value::as_str)
            .filter(|id| id.matches('/').count() <= 1)
        {
            m.fill_from_id(id, total_params);
        }
        if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
            m.fill_from_id(name, total_params);
        } else if dir.file_name().is_none() {
            // `Path("x/..").name` is "..": Python names the folder by its last component.
            let name = dir
                .components()
                .next_back()
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            if let Some(name) = name {
                m.fill_from_id(&name, total_params);
            }
        }
        let gen_path = dir.join("generation_config.json");
        if gen_path.is_file() {
            // Not every model's generation_config.json is valid JSON: the reference ignores it then.
            if let Ok(Value::Object(gen)) = std::fs::read(&gen_path)
                .map_err(drop)
                .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(drop))
            {
                for (src, key, integer) in SAMPLING {
                    let v = if src == "penalty_repeat" {
                        gen.get("penalty_repeat")
                            .or_else(|| gen.get("repetition_penalty"))
                    } else {
                        gen.get(src)
                    };
                    if let Some(v) = v {
                        let parsed = sampling_value(v, integer, &gen_path, src)?;
                        if parsed.is_none() {
                            m.sampling.retain(|(k, _)| *k != key);
                        }
                        m.set_sampling(key, parsed);
                    }
                }
            }
        }
        if let Some(path) = override_path.filter(|p| p.is_file()) {
            m.apply_override(path)?;
        }
        if let Some(name) = model_name {
            m.name = Some(name.to_owned());
        }
        Ok(m)
    }

    fn fill_from_id(&mut self, id: &str, total_params: i128) {
        let c = model_id_components(id, total_params);
        if self.name.is_none() {
            self.name = c.full_name.as_deref().map(id_to_title);
        }
        if self.organization.is_none() {
            self.organization = c.org.as_deref().map(id_to_title);
        }
        self.basename = self.basename.take().or(c.basename);
        self.finetune = self.finetune.take().or(c.finetune);
        self.version = self.version.take().or(c.version);
        self.size_label = self.size_label.take().or(c.size_label);
    }

    fn apply_override(&mut self, path: &Path) -> Result<()> {
        let Value::Object(o) = crate::read_json(path)? else {
            return Err(Error::field(path, "(root)", "not an object"));
        };
        for (_, key, integer) in SAMPLING {
            if let Some(v) = o.get(key) {
                let parsed = sampling_value(v, integer, path, key)?;
                if parsed.is_none() {
                    self.sampling.retain(|(k, _)| *k != key);
                }
                self.set_sampling(key, parsed);
            }
        }
        let string = |key: &str| -> Result<Option<Option<String>>> {
            match o.get(key) {
                None => Ok(None),
                Some(Value::Null) => Ok(Some(None)),
                Some(Value::String(s)) => Ok(Some(Some(s.clone()))),
                Some(v) => Err(Error::field(path, key, format!("{v} is not a string"))),
            }
        };
        let fields: [(&str, &mut Option<String>); 9] = [
            ("general.name", &mut self.name),
            ("general.author", &mut self.author),
            ("general.version", &mut self.version),
            ("general.organization", &mut self.organization),
            ("general.finetune", &mut self.finetune),
            ("general.basename", &mut self.basename),
            ("general.description", &mut self.description),
            ("general.quantized_by", &mut self.quantized_by),
            ("general.size_label", &mut self.size_label),
        ];
        for (key, slot) in fields {
            if let Some(v) = string(key)? {
                *slot = v;
            }
        }
        for key in LATER_STRINGS {
            match string(key)? {
                Some(Some(v)) => self.set_string(key, v),
                Some(None) => self.strings.retain(|(k, _)| *k != key),
                None => {}
            }
        }
        for (key, slot) in [
            ("general.tags", &mut self.tags),
            ("general.languages", &mut self.languages),
        ] {
            if let Some(v) = o.get(key) {
                *slot = match v {
                    Value::Null => None,
                    Value::Array(a) => Some(
                        a.iter()
                            .map(|s| s.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| Error::field(path, key, "not a list of strings"))?,
                    ),
                    _ => return Err(Error::field(path, key, "not a list of strings")),
                };
            }
        }
        for key in ["general.base_models", "general.datasets"] {
            if o.contains_key(key) {
                return Err(Error::Unsupported(format!(
                    "{}: {key} in a metadata override is not written yet",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// `set_gguf_meta_model`: the keys in the reference's order.
    pub fn add_to(&self, kv: &mut Kv) {
        for (_, key, _) in SAMPLING {
            if let Some((_, v)) = self.sampling.iter().find(|(k, _)| *k == key) {
                match v {
                    Sampling::Str(s) => kv.string(key, s),
                    Sampling::Int(i) => kv.i32(key, *i),
                    Sampling::Float(f) => kv.f32(key, *f),
                }
            }
        }
        kv.string("general.name", self.name.as_deref().unwrap_or_default());
        let opt = |kv: &mut Kv, key: &str, v: &Option<String>| {
            if let Some(v) = v {
                kv.string(key, v);
            }
        };
        opt(kv, "general.author", &self.author);
        opt(kv, "general.version", &self.version);
        opt(kv, "general.organization", &self.organization);
        opt(kv, "general.finetune", &self.finetune);
        opt(kv, "general.basename", &self.basename);
        opt(kv, "general.description", &self.description);
        opt(kv, "general.quantized_by", &self.quantized_by);
        opt(kv, "general.size_label", &self.size_label);
        for key in LATER_STRINGS {
            if let Some((_, v)) = self.strings.iter().find(|(k, _)| *k == key) {
                kv.string(key, v);
            }
        }
        if let Some(tags) = &self.tags {
            kv.strings("general.tags", tags.clone());
        }
        if let Some(langs) = &self.languages {
            kv.strings("general.languages", langs.clone());
        }
    }
}

/// A README with YAML front matter is where `gguf.Metadata` finds licenses, tags, languages,
/// datasets and base models; reading it needs a YAML reader this converter does not have yet,
/// so such a card is refused rather than converted with those keys missing.
fn check_model_card(dir: &Path) -> Result<()> {
    let path = dir.join("README.md");
    if !path.is_file() {
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let mut lines = text.lines();
    if lines.next() != Some("---") {
        return Ok(());
    }
    let front: Vec<&str> = lines.take_while(|l| *l != "---").collect();
    if front
        .iter()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Ok(());
    }
    Err(Error::Unsupported(format!(
        "{}: model cards with YAML front matter are not read yet (move README.md aside, or \
         give its fields with --metadata)",
        path.display()
    )))
}

/// What `get_model_id_components` returns.
#[derive(Debug, Default, PartialEq)]
pub struct IdComponents {
    /// The name part of `org/name`.
    pub full_name: Option<String>,
    /// The organisation part.
    pub org: Option<String>,
    /// The base name.
    pub basename: Option<String>,
    /// The fine-tune.
    pub finetune: Option<String>,
    /// The version.
    pub version: Option<String>,
    /// The size label.
    pub size_label: Option<String>,
}

fn full(re: &str) -> Regex {
    Regex::new(&format!("(?i)^(?:{re})$")).expect("valid pattern")
}

static VERSION: LazyLock<Regex> = LazyLock::new(|| full(r"(v|iter)?\d+([.]\d+)*"));
static QTYPE: LazyLock<Regex> = LazyLock::new(|| full(r"i?q\d(_\w)*|b?fp?(16|32)"));
static SIZE: LazyLock<Regex> =
    LazyLock::new(|| full(r"(([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl)"));
static FINETUNE: LazyLock<Regex> = LazyLock::new(|| full(r"chat|instruct|vision|lora"));
static NO_TITLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(v\d+(?:\.\d+)*|\d.*)$").expect("valid"));

static ND: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\p{Nd}$").expect("valid"));

/// Python's `str.isdecimal` for one character: Unicode's decimal digits (category Nd).
fn decimal(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && ND.is_match(c.encode_utf8(&mut [0; 4])))
}

/// `Metadata.get_model_id_components(model_id, total_params)`.
pub fn model_id_components(model_id: &str, total_params: i128) -> IdComponents {
    if model_id.contains(' ') {
        return IdComponents {
            full_name: Some(model_id.to_owned()),
            ..IdComponents::default()
        };
    }
    let (mut org, name) = match model_id.split_once('/') {
        Some((o, n)) => (Some(o.to_owned()), n.to_owned()),
        None => (None, model_id.to_owned()),
    };
    if org.as_deref().is_some_and(|o| o.starts_with('.')) {
        org = None;
    }
    let mut parts: Vec<String> = name
        .split('-')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    #[derive(Default, Clone)]
    struct T {
        basename: bool,
        size: bool,
        finetune: bool,
        version: bool,
        kind: bool,
    }
    impl T {
        fn len(&self) -> usize {
            [
                self.basename,
                self.size,
                self.finetune,
                self.version,
                self.kind,
            ]
            .iter()
            .filter(|b| **b)
            .count()
        }
    }
    let mut types = vec![T::default(); parts.len()];
    for i in 0..parts.len() {
        let part = parts[i].clone();
        if VERSION.is_match(&part) {
            types[i].version = true;
        } else if QTYPE.is_match(&part) {
            types[i].kind = true;
            parts[i] = part.to_uppercase();
        } else if i > 0 && SIZE.is_match(&part) {
            let mut p: Vec<char> = part.replace('_', ".").chars().collect();
            if p.last().is_some_and(|c| decimal(*c)) && p.len() >= 2 {
                let n = p.len();
                let (a, b) = (p[n - 2], p[n - 1]);
                p.truncate(n - 2);
                p.extend(['.', b, a]);
            }
            let n = p.len();
            if n > 1 && decimal(p[n - 2]) && "kmbt".contains(p[n - 1]) {
                p[n - 1] = p[n - 1].to_ascii_uppercase();
            }
            if total_params != 0 {
                let head: String = p[..n - 1].iter().collect();
                if let Ok(value) = head.parse::<f64>() {
                    let scale = match " KMBT".find(p[n - 1]) {
                        Some(k) => 1000f64.powi(k as i32),
                        None => 0.001,
                    };
                    let label = value * scale;
                    let total = total_params as f64;
                    let context = (total_params < 0 && label < (total_params.abs() / 8) as f64)
                        || (total_params > 0
                            && (label - total).abs() > (7 * total_params / 8) as f64);
                    if context {
                        types[i].finetune = true;
                        let last = p[n - 1].to_lowercase().next().unwrap_or(p[n - 1]);
                        p[n - 1] = last;
                    }
                }
            }
            if types[i].len() == 0 {
                types[i].size = true;
            }
            parts[i] = p.into_iter().collect();
        } else if i > 0 && FINETUNE.is_match(&part) {
            if total_params < 0 && part.to_lowercase() == "lora" {
                types[i].kind = true;
            } else {
                types[i].finetune = true;
            }
        }
    }
    let numeric_size = parts
        .iter()
        .zip(&types)
        .any(|(n, t)| t.size && n.chars().any(decimal));
    if numeric_size {
        for (n, t) in parts.iter().zip(types.iter_mut()) {
            if t.size && n.chars().all(char::is_alphabetic) {
                t.size = false;
            }
        }
    }
    let mut at_start = true;
    for (part, t) in parts.iter().zip(types.iter_mut()) {
        let first_alpha = part.chars().next().is_some_and(char::is_alphabetic);
        if at_start && ((t.len() == 0 && first_alpha) || t.version) {
            t.basename = true;
        } else {
            at_start = false;
            if t.len() == 0 {
                t.finetune = true;
            }
        }
    }
    for t in types.iter_mut().rev() {
        if t.basename && t.len() > 1 {
            t.basename = false;
        } else {
            break;
        }
    }
    let join = |f: &dyn Fn(&T) -> bool| -> Option<String> {
        let v: Vec<&str> = parts
            .iter()
            .zip(&types)
            .filter(|(_, t)| f(t))
            .map(|(p, _)| p.as_str())
            .collect();
        (!v.is_empty()).then(|| v.join("-"))
    };
    let mut basename = join(&|t| t.basename);
    let mut sizes: Vec<&str> = Vec::new();
    for (p, t) in parts.iter().zip(&types) {
        if t.size && !sizes.contains(&p.as_str()) {
            sizes.push(p);
        }
    }
    let size_label = (!sizes.is_empty()).then(|| sizes.join("-"));
    let finetune = join(&|t| t.finetune);
    let version = join(&|t| t.version && !t.basename);
    if size_label.is_none() && finetune.is_none() && version.is_none() {
        basename = None;
    }
    IdComponents {
        full_name: Some(name),
        org,
        basename,
        finetune,
        version,
        size_label,
    }
}

/// Python's `str.title()`.
fn title(w: &str) -> String {
    let mut out = String::with_capacity(w.len());
    let mut prev_cased = false;
    for c in w.chars() {
        let cased = c.is_lowercase() || c.is_uppercase();
        if cased {
            if prev_cased {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
        } else {
            out.push(c);
        }
        prev_cased = cased;
    }
    out
}

/// Python's `str.islower()`.
fn is_lower(w: &str) -> bool {
    let mut cased = false;
    for c in w.chars() {
        if c.is_uppercase() {
            return false;
        }
        cased |= c.is_lowercase();
    }
    cased
}

/// `Metadata.id_to_title`.
pub fn id_to_title(s: &str) -> String {
    s.trim()
        .replace('-', " ")
        .split_whitespace()
        .map(|w| {
            if is_lower(w) && !NO_TITLE.is_match(w) {
                title(w)
            } else {
                w.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(
        id: &str,
        total: i128,
    ) -> (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ) {
        let c = model_id_components(id, total);
        (c.basename, c.finetune, c.version, c.size_label)
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn ids_split_as_the_reference_splits_them() {
        // Cases from gguf-py's own tests/test_metadata.py.
        assert_eq!(
            c("Mixtral-8x7B-Instruct-v0.1", 0),
            (s("Mixtral"), s("Instruct"), s("v0.1"), s("8x7B"))
        );
        assert_eq!(
            c("Meta-Llama-3-8B", 0),
            (s("Meta-Llama-3"), None, None, s("8B"))
        );
        assert_eq!(
            c("bloom-7b1-petals", 0),
            (s("bloom"), s("petals"), None, s("7.1B"))
        );
        assert_eq!(c("NousResearch/Meta-Llama-3-8B", 0).0, s("Meta-Llama-3"));
        assert_eq!(c("gpt2", 0), (None, None, None, None));
        assert_eq!(
            c("Qwen1.5-MoE-A2.7B-Chat", 0),
            (s("Qwen1.5-MoE"), s("Chat"), None, s("A2.7B"))
        );
        assert_eq!(
            c("open-llama-3b-v2", 0),
            (s("open-llama"), None, s("v2"), s("3B"))
        );
        assert_eq!(
            c("Llama-3-Instruct-abliteration-LoRA-8B", 0),
            (s("Llama-3"), s("Instruct-abliteration-LoRA"), None, s("8B"))
        );
        // A size far from the parameter count is a context length, lowercased.
        assert_eq!(c("Hermes-2-Pro-Llama-3-8b-128k", 8_000_000_000).3, s("8B"));
        assert_eq!(
            c("Hermes-2-Pro-Llama-3-8b-128k", 8_000_000_000).1,
            s("128k")
        );
    }

    #[test]
    fn titles_as_python() {
        assert_eq!(id_to_title("tiny-llama-test"), "Tiny Llama Test");
        assert_eq!(id_to_title("Meta-Llama-3-8B"), "Meta Llama 3 8B");
        assert_eq!(id_to_title("llama3b-v0.1"), "Llama3B v0.1");
    }
}
