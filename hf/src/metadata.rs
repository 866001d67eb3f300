//! `general.*` as `gguf.Metadata` derives it: from the model card's YAML front matter,
//! `config.json`'s `_name_or_path`, the folder name, `generation_config.json`'s sampling
//! settings and a `--metadata` JSON override, with the reference's name heuristics
//! (`get_model_id_components`, `id_to_title`).

use crate::error::{Error, Result};
use crate::kv::Kv;
use regex::Regex;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::LazyLock;

/// `gguf.Metadata`'s string fields: attribute, GGUF key, in `set_gguf_meta_model`'s order.
const FIELDS: [(&str, &str); 20] = [
    ("name", "general.name"),
    ("author", "general.author"),
    ("version", "general.version"),
    ("organization", "general.organization"),
    ("finetune", "general.finetune"),
    ("basename", "general.basename"),
    ("description", "general.description"),
    ("quantized_by", "general.quantized_by"),
    ("size_label", "general.size_label"),
    ("license", "general.license"),
    ("license_name", "general.license.name"),
    ("license_link", "general.license.link"),
    ("url", "general.url"),
    ("doi", "general.doi"),
    ("uuid", "general.uuid"),
    ("repo_url", "general.repo_url"),
    ("source_url", "general.source.url"),
    ("source_doi", "general.source.doi"),
    ("source_uuid", "general.source.uuid"),
    ("source_repo_url", "general.source.repo_url"),
];

/// The fields of a base model or data set entry, in the order they are written.
pub(crate) const ENTRY_FIELDS: [&str; 9] = [
    "name",
    "author",
    "version",
    "organization",
    "description",
    "url",
    "doi",
    "uuid",
    "repo_url",
];

/// The authorship and sampling metadata, each field as `gguf.Metadata` holds it (a value is
/// whatever JSON or YAML gave; it is checked when written, where the reference would fail).
#[derive(Default, Debug, Clone)]
pub struct Metadata {
    /// What the reference would silently ignore, said.
    pub warnings: Vec<String>,
    fields: Map<String, Value>,
    base_models: Option<Vec<Value>>,
    datasets: Option<Vec<Value>>,
    tags: Option<Vec<Value>>,
    languages: Option<Vec<Value>>,
    sampling: Vec<(&'static str, Sampling)>,
    source: std::path::PathBuf,
}

#[derive(Debug, Clone)]
enum Sampling {
    Str(String),
    Int(i32),
    Float(f64),
}

/// Sampling settings: (generation_config key, GGUF key, is an integer).
pub(crate) const SAMPLING: [(&str, &str, Option<bool>); 12] = [
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

/// Whether a field holds something (Python's `is not None`).
fn held(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null())
}

impl Metadata {
    /// A string field, if it holds a string.
    pub fn get(&self, attr: &str) -> Option<&str> {
        self.fields.get(attr).and_then(Value::as_str)
    }

    /// Whether a field holds a value.
    pub fn is_set(&self, attr: &str) -> bool {
        held(self.fields.get(attr))
    }

    /// Sets a string field, or clears it.
    pub fn put(&mut self, attr: &str, value: Option<String>) {
        match value {
            Some(v) => self.fields.insert(attr.to_owned(), Value::String(v)),
            None => self.fields.remove(attr),
        };
    }

    fn fill(&mut self, attr: &str, value: Option<String>) {
        if let Some(v) = value {
            if !held(self.fields.get(attr)) {
                self.fields.insert(attr.to_owned(), Value::String(v));
            }
        }
    }

    fn set_sampling(&mut self, key: &'static str, value: Option<Sampling>) {
        self.sampling.retain(|(k, _)| *k != key);
        if let Some(v) = value {
            self.sampling.push((key, v));
        }
    }

    /// `gguf.naming_convention` of this model's name, base name, fine-tune and version.
    pub(crate) fn file_stem(
        &self,
        size_label: Option<&str>,
        output_type: Option<&str>,
        model_type: Option<&str>,
    ) -> String {
        ggufrw::naming::naming_convention(
            self.get("name"),
            self.get("basename"),
            self.get("finetune"),
            self.get("version"),
            size_label,
            output_type,
            model_type,
        )
    }

    /// `Metadata.load(override, dir, model_name, total_params)`.
    pub fn load(
        override_path: Option<&Path>,
        dir: &Path,
        model_name: Option<&str>,
        total_params: i128,
    ) -> Result<Metadata> {
        let mut m = Metadata {
            source: dir.join("README.md"),
            ..Metadata::default()
        };
        if let Some(card) = model_card(dir)? {
            m.apply_card(&card, total_params);
        }
        let config_path = dir.join("config.json");
        let hf_params = if config_path.is_file() {
            Some(crate::read_json(&config_path)?)
        } else {
            None
        };
        if let Some(id) = hf_params
            .as_ref()
            .and_then(|p| p.get("_name_or_path"))
            .and_then(Value::as_str)
            .filter(|id| id.matches('/').count() <= 1)
        {
            m.fill_from_id(id, total_params);
        }
        let folder = dir
            .components()
            .next_back()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        m.fill_from_id(&folder, total_params);
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
                        if parsed.is_some() {
                            m.set_sampling(key, parsed);
                        }
                    }
                }
            }
        }
        if let Some(path) = override_path.filter(|p| p.is_file()) {
            m.apply_override(path)?;
        }
        if let Some(name) = model_name {
            m.put("name", Some(name.to_owned()));
        }
        Ok(m)
    }

    fn fill_from_id(&mut self, id: &str, total_params: i128) {
        let c = model_id_components(id, total_params);
        self.fill("name", c.full_name.as_deref().map(id_to_title));
        self.fill("organization", c.org.as_deref().map(id_to_title));
        self.fill("basename", c.basename);
        self.fill("finetune", c.finetune);
        self.fill("version", c.version);
        self.fill("size_label", c.size_label);
    }

    /// The model card's part of `apply_metadata_heuristic`.
    fn apply_card(&mut self, card: &Map<String, Value>, total_params: i128) {
        let pairs: [(&str, &str); 27] = [
            ("name", "name"),
            ("author", "author"),
            ("version", "version"),
            ("organization", "organization"),
            ("description", "description"),
            ("finetune", "finetune"),
            ("basename", "basename"),
            ("size_label", "size_label"),
            ("source_url", "url"),
            ("source_doi", "doi"),
            ("source_uuid", "uuid"),
            ("source_repo_url", "repo_url"),
            ("name", "model_name"),
            ("author", "model_author"),
            ("version", "model_version"),
            ("organization", "model_organization"),
            ("description", "model_description"),
            ("finetune", "model_finetune"),
            ("basename", "model_basename"),
            ("size_label", "model_size_label"),
            ("source_url", "model_url"),
            ("source_doi", "model_doi"),
            ("source_uuid", "model_uuid"),
            ("source_repo_url", "model_repo_url"),
            ("name", "model_name"),
            ("author", "model_creator"),
            ("basename", "model_type"),
        ];
        for (attr, key) in pairs {
            if !held(self.fields.get(attr)) {
                if let Some(v) = card.get(key).filter(|v| !v.is_null()) {
                    self.fields.insert(attr.to_owned(), v.clone());
                }
            }
        }
        let entries = |keys: [&str; 3]| -> Option<Vec<Value>> {
            if !keys.iter().any(|k| card.contains_key(*k)) {
                return None;
            }
            let v = card
                .get(keys[0])
                .or_else(|| card.get(keys[1]))
                .or_else(|| card.get(keys[2]));
            Some(match v {
                Some(Value::String(s)) => vec![Value::String(s.clone())],
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            })
        };
        if let Some(ids) = entries(["base_model", "base_models", "base_model_sources"]) {
            let list = self.base_models.get_or_insert_with(Vec::new);
            list.extend(ids.iter().map(|id| entry(id, total_params)));
        }
        if let Some(ids) = entries(["datasets", "dataset", "dataset_sources"]) {
            let list = self.datasets.get_or_insert_with(Vec::new);
            list.extend(ids.iter().map(|id| entry(id, total_params)));
        }
        for attr in ["license", "license_name", "license_link"] {
            if !held(self.fields.get(attr)) {
                if let Some(v) = card.get(attr).filter(|v| !v.is_null()) {
                    self.fields.insert(attr.to_owned(), v.clone());
                }
            }
        }
        for (tags, key) in [
            (true, "tags"),
            (true, "pipeline_tag"),
            (false, "languages"),
            (false, "language"),
        ] {
            let Some(v) = card.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            let list = if tags {
                &mut self.tags
            } else {
                &mut self.languages
            };
            let list = list.get_or_insert_with(Vec::new);
            match v {
                Value::String(_) => list.push(v.clone()),
                Value::Array(a) => list.extend(a.iter().cloned()),
                _ => {}
            }
        }
    }

    fn apply_override(&mut self, path: &Path) -> Result<()> {
        let Value::Object(o) = crate::read_json(path)? else {
            return Err(Error::field(path, "(root)", "not an object"));
        };
        for (_, key, integer) in SAMPLING {
            if let Some(v) = o.get(key) {
                let parsed = sampling_value(v, integer, path, key)?;
                self.set_sampling(key, parsed);
            }
        }
        for (attr, key) in FIELDS {
            if let Some(v) = o.get(key) {
                // `Metadata.load` takes `license.name` and `license.link` from the override,
                // never `license` itself: the reference keeps the model card's.
                if attr == "license" {
                    self.warnings.push(format!(
                        "{}: general.license is not taken from a --metadata file (the reference \
                         ignores it and keeps the model card's); set it afterwards with \
                         `ggufrw edit OUT.gguf --set general.license=string:...`",
                        path.display()
                    ));
                    continue;
                }
                self.fields.insert(attr.to_owned(), v.clone());
            }
        }
        let list = |v: &Value| match v {
            Value::Array(a) => Some(a.clone()),
            _ => None,
        };
        if let Some(v) = o.get("general.base_models") {
            self.base_models = list(v);
        }
        if let Some(v) = o.get("general.datasets") {
            self.datasets = list(v);
        }
        if let Some(v) = o.get("general.tags") {
            self.tags = list(v);
        }
        if let Some(v) = o.get("general.languages") {
            self.languages = list(v);
        }
        self.source = path.to_owned();
        Ok(())
    }

    /// `set_gguf_meta_model`: the keys in the reference's order. A value of a type the
    /// reference cannot write (it fails there too) is refused, naming the field.
    pub fn add_to(&self, kv: &mut Kv) -> Result<()> {
        for (_, key, _) in SAMPLING {
            if let Some((_, v)) = self.sampling.iter().find(|(k, _)| *k == key) {
                match v {
                    Sampling::Str(s) => kv.string(key, s),
                    Sampling::Int(i) => kv.i32(key, *i),
                    Sampling::Float(f) => kv.f32(key, *f),
                }
            }
        }
        let text = |attr: &str, v: &Value| -> Result<String> {
            match v {
                Value::String(s) => Ok(s.clone()),
                Value::Array(a) if attr == "license" => Ok(a
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| x.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(",")),
                _ => Err(Error::field(
                    &self.source,
                    attr,
                    format!("{v} is not a string"),
                )),
            }
        };
        for (attr, key) in FIELDS {
            if let Some(v) = self.fields.get(attr).filter(|v| !v.is_null()) {
                kv.string(key, &text(attr, v)?);
            }
        }
        for (list, what) in [
            (&self.base_models, "base_model"),
            (&self.datasets, "dataset"),
        ] {
            let Some(list) = list else { continue };
            kv.u32(&format!("general.{what}.count"), list.len() as u32);
            for (i, e) in list.iter().enumerate() {
                let Some(e) = e.as_object() else { continue };
                for f in ENTRY_FIELDS {
                    if let Some(v) = e.get(f) {
                        kv.string(&format!("general.{what}.{i}.{f}"), &text(f, v)?);
                    }
                }
            }
        }
        for (list, key) in [
            (&self.tags, "general.tags"),
            (&self.languages, "general.languages"),
        ] {
            if let Some(list) = list {
                let strings: Option<Vec<String>> =
                    list.iter().map(|v| v.as_str().map(str::to_owned)).collect();
                let strings = strings
                    .ok_or_else(|| Error::field(&self.source, key, "not a list of strings"))?;
                kv.strings(key, strings);
            }
        }
        Ok(())
    }
}

/// A base model or data set entry from a model card: a URL, a Hugging Face id, or a mapping
/// taken as it is.
fn entry(id: &Value, total_params: i128) -> Value {
    let mut out = Map::new();
    let mut put = |k: &str, v: String| {
        out.insert(k.to_owned(), Value::String(v));
    };
    match id {
        Value::String(id) => {
            let url = ["http://", "https://", "ssh://"]
                .iter()
                .any(|p| id.starts_with(p));
            if url {
                put("repo_url", id.clone());
                if let Some(c) = HF_URL
                    .captures(id)
                    .filter(|_| id.contains("huggingface.co"))
                {
                    let c = model_id_components(&c[1], total_params);
                    if let Some(n) = c.full_name {
                        put("name", id_to_title(&n));
                    }
                    if let Some(o) = c.org {
                        put("organization", id_to_title(&o));
                    }
                    if let Some(v) = c.version {
                        put("version", v);
                    }
                }
            } else {
                let c = model_id_components(id, total_params);
                if let Some(n) = &c.full_name {
                    put("name", id_to_title(n));
                }
                if let Some(o) = &c.org {
                    put("organization", id_to_title(o));
                }
                if let Some(v) = c.version {
                    put("version", v);
                }
                if let (Some(o), Some(n)) = (&c.org, &c.full_name) {
                    put("repo_url", format!("https://huggingface.co/{o}/{n}"));
                }
            }
        }
        Value::Object(o) => return Value::Object(o.clone()),
        _ => {}
    }
    Value::Object(out)
}

static HF_URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^https?://huggingface.co/([^/]+/[^/]+)$").expect("valid"));

/// `Metadata.load_model_card`: the README's YAML front matter, with the reference's two
/// fixes (`- no` quoted, tabs as two spaces).
fn model_card(dir: &Path) -> Result<Option<Map<String, Value>>> {
    let path = dir.join("README.md");
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let lines = python_splitlines(&text);
    if lines.first() != Some(&"---") {
        return Ok(None);
    }
    let mut yaml = String::new();
    for l in &lines[1..] {
        if *l == "---" {
            break;
        }
        yaml.push_str(l);
        yaml.push('\n');
    }
    let yaml = yaml.replace("- no\n", "- \"no\"\n").replace('\t', "  ");
    let docs = yaml_rust2::YamlLoader::load_from_str(&yaml)
        .map_err(|e| Error::field(&path, "front matter", format!("not YAML: {e}")))?;
    match docs.first().map(yaml_to_json) {
        Some(Value::Object(o)) => Ok(Some(o)),
        _ => Ok(Some(Map::new())),
    }
}

/// Python's `str.splitlines()` at the boundaries model cards have (`\n`, `\r\n`, `\r`).
fn python_splitlines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find(['\n', '\r']) {
            Some(i) => {
                out.push(&rest[..i]);
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            None => {
                out.push(rest);
                break;
            }
        }
    }
    out
}

/// YAML as PyYAML's `safe_load` gives it for what model cards hold. (YAML 1.1's plain
/// `yes`/`no`/`on`/`off` are booleans to PyYAML and strings here: the loader does not say
/// whether a scalar was quoted, and the reference quotes `- no` itself.)
fn yaml_to_json(y: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(r.clone())),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Real(r) => r.clone(),
                        Yaml::Boolean(b) => if *b { "True" } else { "False" }.to_owned(),
                        _ => String::new(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Null | Yaml::BadValue | Yaml::Alias(_) => Value::Null,
    }
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
