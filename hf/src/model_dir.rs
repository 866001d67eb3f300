//! A checkpoint folder, read once: its config as the reference sees it and every JSON file a
//! conversion consults (`tokenizer.json`, `tokenizer_config.json`, …), each parsed the first
//! time it is asked for and shared after that.

use crate::config::Hparams;
use crate::error::{Result, Unsupported};
use crate::json::read_json;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A Hugging Face model folder.
pub struct ModelDir {
    /// The folder.
    pub path: PathBuf,
    /// `config.json` as `AutoConfig(...).to_dict()` gives it.
    pub(crate) hparams: Hparams,
    json: Mutex<HashMap<String, Option<Arc<Value>>>>,
}

impl ModelDir {
    /// Opens `path`: a folder with a `config.json`.
    pub fn open(path: &Path) -> Result<ModelDir> {
        if !path.is_dir() {
            return Err(Unsupported::NotAFolder(path.to_owned()).into());
        }
        Ok(ModelDir {
            path: path.to_owned(),
            hparams: Hparams::load(path)?,
            json: Mutex::new(HashMap::new()),
        })
    }

    /// A model known by its `config.json` alone, made rather than read (a GGUF model's, as
    /// export-hf makes it); `path` names it in messages and holds no other file.
    pub(crate) fn with_config(path: &Path, config: Value) -> Result<ModelDir> {
        Ok(ModelDir {
            path: path.to_owned(),
            hparams: Hparams::from_value(path.join("config.json"), config)?,
            json: Mutex::new(HashMap::new()),
        })
    }

    /// A folder read for its tokenizer files alone (no `config.json` needed).
    pub fn files(path: &Path) -> ModelDir {
        ModelDir {
            path: path.to_owned(),
            hparams: Hparams {
                map: serde_json::Map::new(),
                path: path.join("config.json"),
                class: None,
                raw: serde_json::Map::new(),
            },
            json: Mutex::new(HashMap::new()),
        }
    }

    /// The path of the folder's file `name`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether the folder has a file `name`.
    pub fn has(&self, name: &str) -> bool {
        self.file(name).is_file()
    }

    /// The folder's JSON file `name`, parsed once; `None` when there is no such file.
    pub fn json(&self, name: &str) -> Result<Option<Arc<Value>>> {
        if let Some(v) = self.lock().get(name) {
            return Ok(v.clone());
        }
        let path = self.file(name);
        let value = if path.is_file() {
            Some(Arc::new(read_json(&path)?))
        } else {
            None
        };
        self.lock().insert(name.to_owned(), value.clone());
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Arc<Value>>>> {
        // A panic elsewhere cannot leave the cache half-written: an entry is one insert.
        self.json.lock().unwrap_or_else(|e| e.into_inner())
    }
}
