//! `conversion/bert.py`: BERT-like encoders (`BertModel` and its WordPiece vocabulary,
//! DistilBERT, RoBERTa).

use super::base::{self, Ctx, Rearrange, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::{self, ArchTable};
use crate::vocab;
use serde_json::Value;

/// `BertModel`: `BertModel`, `BertForMaskedLM`, `CamembertModel`,
/// `BertForSequenceClassification`. An encoder (no causal attention) with its pooling, a
/// classifier's labels where the config names its own, and WordPiece written in "phantom
/// space" form (a word's first piece after `▁`, a continuation without its `##`).
pub(crate) struct Bert;

/// `id2label` in label order, unless it is the two placeholders transformers adds.
fn classifier_labels(hp: &Hparams) -> Result<Option<Vec<String>>> {
    let Some(Value::Object(map)) = hp.map.get("id2label") else {
        return Ok(None);
    };
    if map.is_empty() {
        return Ok(None);
    }
    let mut labels = map
        .iter()
        .map(|(k, v)| {
            let id: i64 = k
                .parse()
                .map_err(|_| Error::field(&hp.path, "id2label", format!("{k:?} is not an id")))?;
            let label = v
                .as_str()
                .ok_or_else(|| Error::field(&hp.path, "id2label", "a label is not a string"))?;
            Ok((id, label.to_owned()))
        })
        .collect::<Result<Vec<_>>>()?;
    labels.sort();
    let placeholder = labels.len() == 2
        && labels
            .first()
            .is_some_and(|(i, l)| *i == 0 && l == "LABEL_0");
    Ok((!placeholder).then(|| labels.into_iter().map(|(_, l)| l).collect()))
}

/// `type_vocab_size`, 1 where the config has none.
fn token_type_count(hp: &Hparams) -> Result<u32> {
    Ok(match hp.map.get("type_vocab_size") {
        None => 1,
        Some(v) => base::u32_of(hp, "type_vocab_size", v)?,
    })
}

/// `BertModel.set_gguf_parameters`: `TextModel`'s keys, no causal attention, the pooling and
/// the classifier's labels.
fn bert_keys(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    bert_keys_with(cx, kv, classifier_labels)
}

/// How a class reads its classifier's labels: [`classifier_labels`] where transformers reads
/// the config, [`raw_classifier_labels`] where the reference reads `config.json` as written.
type Labels = fn(&Hparams) -> Result<Option<Vec<String>>>;

/// [`bert_keys`] with the labels read by `labels`.
fn bert_keys_with(cx: &Ctx, kv: &mut Kv, labels: Labels) -> Result<()> {
    base::set_gguf_parameters(cx, kv)?;
    kv.bool(&cx.key("attention.causal"), false);
    base::pooling(cx, kv)?;
    if let Some(labels) = labels(cx.hp())? {
        kv.strings(&cx.key("classifier.output_labels"), labels);
    }
    Ok(())
}

/// `id2label` as the reference reads it from a `config.json` transformers does not know: its
/// keys stay strings, so two labels fail the placeholder check (`cls_out_labels[0]`, a
/// `KeyError`), and more are ordered by their keys' text.
fn raw_classifier_labels(hp: &Hparams) -> Result<Option<Vec<String>>> {
    let Some(Value::Object(map)) = hp.map.get("id2label") else {
        return Ok(None);
    };
    if map.is_empty() {
        return Ok(None);
    }
    if map.len() == 2 {
        return Err(Error::reference(format!(
            "KeyError: 0 ({}: id2label's keys are strings as written, and the reference looks \
             label 0 up by number)",
            hp.path.display()
        )));
    }
    let mut labels: Vec<(&String, &Value)> = map.iter().collect();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    labels
        .into_iter()
        .map(|(_, v)| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| Error::field(&hp.path, "id2label", "a label is not a string"))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// `BertModel.filter_tensors`: `bert.` dropped, old `gamma`/`beta` names read as weight and
/// bias, the pooler and the pre-training heads left out.
fn bert_filter(name: &str) -> Option<String> {
    let mut name = name.strip_prefix("bert.").unwrap_or(name).to_owned();
    if let Some(stem) = name.strip_suffix(".gamma") {
        name = format!("{stem}.weight");
    }
    if let Some(stem) = name.strip_suffix(".beta") {
        name = format!("{stem}.bias");
    }
    let dropped = [
        "embeddings.position_ids",
        "pooler.dense.weight",
        "pooler.dense.bias",
    ];
    if dropped.contains(&name.as_str())
        || name.starts_with("cls.predictions")
        || name.starts_with("cls.seq_relationship")
    {
        return None;
    }
    base::filter_tensors(&name)
}

/// `BertModel.modify_tensors`: a classifier's direct projection named as its output.
fn bert_tensor(cx: &Ctx, name: &str, change: Rearrange) -> Yields {
    bert_tensor_with(cx, name, change, classifier_labels)
}

/// [`bert_tensor`] with the labels read by `labels`.
fn bert_tensor_with(cx: &Ctx, name: &str, change: Rearrange, labels: Labels) -> Yields {
    let name = match (labels(cx.hp())?.is_some(), name) {
        (true, "classifier.weight") => "classifier.out_proj.weight",
        (true, "classifier.bias") => "classifier.out_proj.bias",
        _ => name,
    };
    base::yield_as(name, change)
}

impl TextModel for Bert {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        bert_keys(cx, kv)
    }

    /// `get_vocab_base`'s tokens in phantom-space form, as the `bert` tokenizer model.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        const CONTROL: i32 = 3;
        let v = crate::bpe::vocab(cx.dir, cx.hp(), cx.tokenizer_pre)?;
        kv.u32(
            "tokenizer.ggml.token_type_count",
            token_type_count(cx.hp())?,
        );
        let tokens: Vec<String> = v
            .tokens
            .into_iter()
            .zip(&v.types)
            .map(|(t, &ty)| match (ty == CONTROL, t.strip_prefix("##")) {
                (true, _) => t,
                (false, Some(rest)) => rest.to_owned(),
                (false, None) => format!("\u{2581}{t}"),
            })
            .collect();
        let n = tokens.len() as u64;
        kv.string("tokenizer.ggml.model", "bert");
        kv.string("tokenizer.ggml.pre", &v.pre);
        kv.strings("tokenizer.ggml.tokens", tokens);
        kv.i32s("tokenizer.ggml.token_type", v.types);
        vocab::SpecialVocab::load(cx.dir, Some(n), false)?.add_to(kv)
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        bert_filter(name)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        bert_tensor(cx, name, Rearrange::default())
    }
}

/// `DistilBertModel(BertModel)`: DistilBERT's own names (`distilbert.`, no token types), its
/// LayerNorm epsilon (1e-12) written first, the masked-LM head left out.
pub(crate) struct DistilBert;

impl TextModel for DistilBert {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Bert)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        kv.f32(&cx.key("attention.layer_norm_epsilon"), 1e-12);
        bert_keys(cx, kv)
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        let name = name.strip_prefix("distilbert.").unwrap_or(name);
        if name.starts_with("vocab_") {
            return None;
        }
        bert_filter(name)
    }
}

/// `RobertaModel(BertModel)`: `RobertaModel`, `RobertaForSequenceClassification`. Its
/// positions start past the padding id: the first `pad_token_id + 1` rows of the position
/// embeddings are cut, and the context shortened by as many. GPT-2's BPE where there is a
/// `tokenizer.json`.
pub(crate) struct Roberta;

/// `1 + pad_token_id`, where the config has a padding id.
fn position_offset(hp: &Hparams) -> Result<Option<u64>> {
    match hp.map.get("pad_token_id") {
        None | Some(Value::Null) => Ok(None),
        Some(_) => Ok(Some(1 + hp.int(&["pad_token_id"])?)),
    }
}

impl TextModel for Roberta {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Bert)
    }

    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        Bert.init_hparams(class, hp);
        let Ok(Some(offset)) = position_offset(hp) else {
            return;
        };
        if let Some(n) = hp
            .map
            .get("max_position_embeddings")
            .and_then(Value::as_i64)
        {
            hp.map
                .insert("max_position_embeddings".into(), (n - offset as i64).into());
        }
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if !cx.dir.file("tokenizer.json").exists() {
            return Bert.set_vocab(cx, kv);
        }
        base::gpt2(cx, kv)?;
        kv.u32(
            "tokenizer.ggml.token_type_count",
            token_type_count(cx.hp())?,
        );
        Ok(())
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        bert_filter(name.strip_prefix("roberta.").unwrap_or(name))
    }

    /// The position embeddings from row `pad_token_id + 1` on.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut change = Rearrange::default();
        if name == "embeddings.position_embeddings.weight" {
            if let Some(offset) = position_offset(cx.hp())? {
                let rows = shape.first().copied().unwrap_or(0);
                change.rows = Some((offset.min(rows), rows));
            }
        }
        bert_tensor(cx, name, change)
    }
}

/// `ModernBertModel(BertModel)`: `ModernBertModel`, `ModernBertForMaskedLM`,
/// `ModernBertForSequenceClassification`. BERT's keys with the local attention's window and
/// its global layers' period, no RoPE scaling, the vocabulary size and the activation; GPT-2's
/// BPE marked to add bos, eos and sep; `model.` dropped from the names.
pub(crate) struct ModernBert;

impl TextModel for ModernBert {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Bert)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        for key in ["add_bos_token", "add_eos_token", "add_sep_token"] {
            kv.bool(&format!("tokenizer.ggml.{key}"), true);
        }
        base::gpt2(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        bert_keys(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(
            &k("attention.sliding_window"),
            hp.int(&["local_attention"])? as u32,
        );
        if let Some(n) = hp.opt_int(&["global_attn_every_n_layers"])? {
            kv.u32(&k("attention.sliding_window_pattern"), n as u32);
        }
        kv.string(&k("rope.scaling.type"), "none");
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        if let Some(act) = hp
            .map
            .get("hidden_activation")
            .filter(|v| crate::vocab::truthy(v))
        {
            let act = act
                .as_str()
                .ok_or_else(|| Error::field(&hp.path, "hidden_activation", "not a string"))?;
            kv.string(&k("hidden_activation"), act);
        }
        Ok(())
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        bert_filter(name.strip_prefix("model.").unwrap_or(name))
    }
}

/// `EuroBertModel(TextModel)`: `EuroBertModel`, `JinaEmbeddingsV5Model`. A Llama-like encoder:
/// `TextModel`'s keys, no causal attention, no RoPE scaling, its pooling; GPT-2's BPE marked
/// not to add bos; `model.` dropped from the names.
pub(crate) struct EuroBert;

impl TextModel for EuroBert {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        kv.bool("tokenizer.ggml.add_bos_token", false);
        base::gpt2(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        kv.bool(&cx.key("attention.causal"), false);
        kv.string(&cx.key("rope.scaling.type"), "none");
        base::pooling(cx, kv)
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(name.strip_prefix("model.").unwrap_or(name))
    }
}

/// `_xlmroberta_set_vocab` from `sentencepiece.bpe.model`: a Unigram model's pieces as the `t5`
/// tokenizer model, padded to the config's vocabulary, realigned to fairseq's ids (`<s>`,
/// `<pad>`, `</s>`, `<unk>` first), with the normalizer's settings.
pub(crate) fn xlmroberta_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    xlmroberta_vocab_with(cx, kv, None)
}

/// [`xlmroberta_vocab`], with `<mask>` set at id `mask` (CONTROL, score 0) after the
/// realignment where given (nomic-bert-moe's, whose model lacks it): an id past the
/// vocabulary is the reference's `IndexError`.
fn xlmroberta_vocab_with(cx: &Ctx, kv: &mut Kv, mask: Option<usize>) -> Result<()> {
    use crate::vocab::token_type::{CONTROL, UNKNOWN};
    let path = cx.dir.file("sentencepiece.bpe.model");
    if !path.is_file() {
        return Err(crate::error::Unsupported::NotYet(format!(
            "{}: no sentencepiece.bpe.model; an XLM-RoBERTa vocabulary read from tokenizer.json \
             alone is not read yet",
            cx.dir.path.display()
        ))
        .into());
    }
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let spec = vocab::sentencepiece_spec(&path, &bytes)?;
    let pieces = super::t5::unigram_pieces_of(&path, &bytes, &spec)?;
    let hp = cx.hp();
    let size = match hp.opt_int(&["vocab_size"])? {
        Some(n) => (n as usize).max(pieces.len()),
        None => pieces.len(),
    };
    let (tokens, scores, types) = super::t5::unigram_pieces(&pieces, size);
    if size < 4 {
        return Err(Error::field(
            &path,
            "pieces",
            "fewer than 4: nothing to realign",
        ));
    }
    let realigned = |head: Vec<String>, v: Vec<String>| -> Vec<String> {
        head.into_iter()
            .chain(v[3..v.len() - 1].iter().cloned())
            .collect()
    };
    let tokens = realigned(
        ["<s>", "<pad>", "</s>", "<unk>"].map(String::from).to_vec(),
        tokens,
    );
    let scores: Vec<f32> = [0.0; 4]
        .into_iter()
        .chain(scores[3..size - 1].iter().copied())
        .collect();
    let mut types: Vec<i32> = [CONTROL, CONTROL, CONTROL, UNKNOWN]
        .into_iter()
        .chain(types[3..size - 1].iter().copied())
        .collect();
    let (mut tokens, mut scores) = (tokens, scores);
    if let Some(at) = mask {
        if at >= tokens.len() {
            return Err(Error::reference(format!(
                "IndexError: <mask> is set at id {at}, past the {} tokens of {}",
                tokens.len(),
                path.display()
            )));
        }
        tokens[at] = "<mask>".into();
        scores[at] = 0.0;
        types[at] = CONTROL;
    }
    let n = super::t5::t5_tokens(kv, tokens, scores, types);
    kv.bool("tokenizer.ggml.add_space_prefix", spec.add_dummy_prefix);
    kv.u32("tokenizer.ggml.token_type_count", token_type_count(hp)?);
    super::t5::normalizer_keys(kv, spec);
    vocab::SpecialVocab::load(cx.dir, Some(n), false)?.add_to(kv)
}

/// `XLMRobertaModel(BertModel)`: `XLMRobertaModel`, `XLMRobertaForSequenceClassification`.
/// RoBERTa's positions past the padding id with XLM-R's Unigram vocabulary; jina-embeddings-v3
/// (`lora_adaptations`) as `jina-bert-v3`, its `parametrizations` names read plainly and its
/// task adapters written beside the model, one LoRA file a task.
pub(crate) struct XlmRoberta;

/// A jina-embeddings-v3 adapter tensor (`….0.lora_A`, `….0.lora_B`: every task's, stacked).
pub(crate) fn is_task_lora(name: &str) -> bool {
    name.ends_with(".0.lora_A") || name.ends_with(".0.lora_B")
}

impl TextModel for XlmRoberta {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Roberta)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        xlmroberta_vocab(cx, kv)
    }

    fn arch(&self, hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        match hp.map.get("lora_adaptations").is_some_and(vocab::truthy) {
            true => &tables::JINA_BERT_V3,
            false => line,
        }
    }

    /// `lora_adaptations`, `lora_alpha` (1 where unset) and `task_instructions`, which must
    /// name every task.
    fn task_adapters(&self, cx: &Ctx) -> Result<Option<base::TaskAdapters>> {
        let hp = cx.hp();
        let names: Vec<String> = match hp.map.get("lora_adaptations") {
            Some(v) if vocab::truthy(v) => v
                .as_array()
                .and_then(|a| a.iter().map(|t| t.as_str().map(str::to_owned)).collect())
                .ok_or_else(|| Error::field(&hp.path, "lora_adaptations", "not a list of names"))?,
            _ => return Ok(None),
        };
        let alpha = hp.opt_float(&["lora_alpha"])?.unwrap_or(1.0);
        let prefixes = match hp.map.get("task_instructions") {
            Some(v) if vocab::truthy(v) => {
                let each: Option<Vec<String>> = names
                    .iter()
                    .map(|n| v.get(n).and_then(Value::as_str).map(str::to_owned))
                    .collect();
                Some(each.ok_or_else(|| {
                    Error::reference(format!(
                        "AssertionError: task_instructions does not name every task of \
                         lora_adaptations ({})",
                        hp.path.display()
                    ))
                })?)
            }
            _ => None,
        };
        Ok(Some(base::TaskAdapters {
            names,
            alpha,
            prefixes,
        }))
    }

    /// The task adapters' tensors go to their own files ([`TextModel::task_adapters`]).
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if is_task_lora(name) {
            return Ok(Vec::new());
        }
        Roberta.modify_tensors(cx, name, shape)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        bert_keys(cx, kv)
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        let mut name = name.strip_prefix("roberta.").unwrap_or(name).to_owned();
        if name.contains(".parametrizations.") {
            name = name.replace(".parametrizations.", ".");
            if let Some(stem) = name.strip_suffix(".original") {
                name = stem.to_owned();
            }
        }
        bert_filter(&name)
    }
}

/// `NeoBert(BertModel)`: `NeoBERT`, `NeoBERTLMHead`, `NeoBERTForSequenceClassification`.
/// BERT's keys with the SwiGLU width (two thirds of `intermediate_size`), RoPE at 10000
/// without scaling, an RMS epsilon, and CLS pooling; its masked-LM head left out and `model.`
/// dropped from the names.
pub(crate) struct NeoBert;

impl TextModel for NeoBert {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Bert)
    }

    /// Its config is read as written (remote code): the labels are checked before anything
    /// else, as `__init__` reads them.
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        raw_classifier_labels(hp)?;
        Bert.block_count(hp, names)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        bert_tensor_with(cx, name, Rearrange::default(), raw_classifier_labels)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        bert_keys_with(cx, kv, raw_classifier_labels)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        // `int(2 * intermediate_size / 3)`: a float division, truncated
        let ff = (2.0 * hp.int(&["intermediate_size"])? as f64 / 3.0) as u32;
        kv.u32(&k("feed_forward_length"), ff);
        kv.f32(&k("rope.freq_base"), 10000.0);
        kv.string(&k("rope.scaling.type"), "none");
        let eps = match hp.map.get("norm_eps") {
            None => 1e-6,
            Some(_) => hp.float(&["norm_eps"])?,
        };
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        kv.u32(&k("pooling_type"), 2);
        Ok(())
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("decoder.") {
            return None;
        }
        bert_filter(name.strip_prefix("model.").unwrap_or(name))
    }
}

/// JinaBERT's RoBERTa vocabulary (the code and bilingual models): `_set_vocab_whitespace` where
/// `tokenizer.json` pre-tokenizes on whitespace, `_set_vocab_gpt2` otherwise.
fn roberta_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let path = cx.dir.file("tokenizer.json");
    let pre = match cx.dir.json("tokenizer.json")? {
        None => None,
        Some(t) => match t.get("pre_tokenizer") {
            None => None,
            Some(Value::Object(p)) => p.get("type").cloned(),
            Some(other) => {
                return Err(Error::field(
                    &path,
                    "pre_tokenizer",
                    format!("{other}: not an object (AttributeError)"),
                ))
            }
        },
    };
    if pre.as_ref().and_then(Value::as_str) != Some("Whitespace") {
        return base::gpt2(cx, kv);
    }
    let v = crate::bpe::vocab(cx.dir, cx.hp(), cx.tokenizer_pre)?;
    kv.string("tokenizer.ggml.model", "whitespace");
    // pinned by the reference, not found from the hash (which jina-v1-en's shares)
    kv.string("tokenizer.ggml.pre", "whitespace");
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.i32s("tokenizer.ggml.token_type", v.types);
    vocab::SpecialVocab::load(cx.dir, None, true)?.add_to(kv)
}

/// `JinaBertV2Model(BertModel)`: `JinaBertModel`, `JinaBertForMaskedLM` (jina-embeddings-v2).
/// BERT's conversion, its config read as written (remote code); the vocabulary by
/// `tokenizer_class`: WordPiece (`BertTokenizer`) as BERT's, RoBERTa's BPE
/// (`RobertaTokenizer`: the code and bilingual models) as [`roberta_vocab`] reads it, with two
/// token types.
pub(crate) struct JinaBertV2;

impl TextModel for JinaBertV2 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Bert)
    }

    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        raw_classifier_labels(hp)?;
        Bert.block_count(hp, names)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let path = cx.dir.file("tokenizer_config.json");
        let config = cx
            .dir
            .json("tokenizer_config.json")?
            .ok_or_else(|| Error::reference(format!("File not found: {}", path.display())))?;
        let class = config
            .get("tokenizer_class")
            .ok_or_else(|| Error::reference("KeyError: 'tokenizer_class'"))?;
        match class.as_str() {
            Some("BertTokenizer") => Bert.set_vocab(cx, kv),
            Some("RobertaTokenizer") => {
                roberta_vocab(cx, kv)?;
                kv.u32("tokenizer.ggml.token_type_count", 2);
                Ok(())
            }
            _ => Err(Error::reference(format!(
                "NotImplementedError: Tokenizer {class} is not supported for JinaBertModel"
            ))),
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        bert_keys_with(cx, kv, raw_classifier_labels)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        bert_tensor_with(cx, name, Rearrange::default(), raw_classifier_labels)
    }
}

/// `NomicBertModel(BertModel)`: `NomicBertModel` (nomic-embed-text v1 and v1.5; v2-moe as
/// `nomic-bert-moe`). BERT's conversion of its remote-code layout: fused q/k/v, a SwiGLU (or,
/// with experts every `moe_every_n_layers`, GELU experts stored as one matrix each), RoPE, the
/// context it was trained for; WordPiece or XLM-R's Unigram by `tokenizer.json`'s model.
pub(crate) struct NomicBert;

/// Experts every so many layers: the `nomic-bert-moe` form.
fn nomic_moe(hp: &Hparams) -> bool {
    hp.map.get("moe_every_n_layers").is_some_and(vocab::truthy)
}

/// `_is_tokenizer_xlmroberta`: whether `tokenizer.json`'s model is Unigram (XLM-R's) rather
/// than WordPiece.
fn nomic_unigram(cx: &Ctx) -> Result<bool> {
    let path = cx.dir.file("tokenizer.json");
    let t = cx
        .dir
        .json("tokenizer.json")?
        .ok_or_else(|| Error::reference(format!("FileNotFoundError: {}", path.display())))?;
    match t
        .get("model")
        .and_then(|m| m.get("type"))
        .and_then(Value::as_str)
    {
        Some("Unigram") => Ok(true),
        Some("WordPiece") => Ok(false),
        other => Err(Error::field(
            &path,
            "model.type",
            format!("unknown tokenizer: {other:?}"),
        )),
    }
}

/// The context it was trained for, from `n_positions` and `max_trained_positions` (the two
/// pairs the reference recognises).
fn nomic_context(hp: &Hparams) -> Result<u64> {
    let npos = hp.int(&["n_positions"])?;
    let mtp = match hp.map.get("max_trained_positions") {
        None => 2048,
        Some(_) => hp.int(&["max_trained_positions"])?,
    };
    match (npos, mtp) {
        (8192, 2048) => Ok(2048),
        (2048, 2048) => Ok(512),
        _ => Err(Error::reference(format!(
            "ValueError: unrecognized parameters: n_positions={npos}, max_trained_positions={mtp}"
        ))),
    }
}

impl TextModel for NomicBert {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Bert)
    }

    fn arch(&self, hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        match nomic_moe(hp) {
            true => &tables::NOMIC_BERT_MOE,
            false => line,
        }
    }

    /// `__init__`'s checks: the recognised context, and the one form of each model (its
    /// activation, no causal attention, biases only with experts, norms after each part,
    /// plain RoPE over whole heads).
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        nomic_context(hp)?;
        let moe = nomic_moe(hp);
        let get = |key: &str| {
            hp.map
                .get(key)
                .ok_or_else(|| Error::reference(format!("KeyError: '{key}'")))
        };
        let want = |key: &str, v: Value| -> Result<()> {
            let have = get(key)?;
            let same = match (&v, have) {
                (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
                (a, b) => a == b,
            };
            if !same {
                return Err(Error::reference(format!(
                    "AssertionError: {key} is {have}, not {v} ({})",
                    hp.path.display()
                )));
            }
            Ok(())
        };
        want(
            "activation_function",
            (if moe { "gelu" } else { "swiglu" }).into(),
        )?;
        want("causal", false.into())?;
        for key in ["qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias"] {
            want(key, moe.into())?;
        }
        want("prenorm", false.into())?;
        want("rotary_emb_fraction", 1.0.into())?;
        want("rotary_emb_interleaved", false.into())?;
        want("rotary_emb_scale_base", Value::Null)?;
        Bert.block_count(hp, names)
    }

    /// BERT's keys with the trained context, then the experts' spacing and count used.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut hp = cx.hp().clone();
        hp.map
            .insert("n_positions".into(), nomic_context(&hp)?.into());
        let cx = cx.with_hparams(&hp);
        bert_keys(&cx, kv)?;
        if nomic_moe(&hp) {
            let k = |s: &str| cx.key(s);
            kv.u32(
                &k("moe_every_n_layers"),
                base::int32(&hp, &["moe_every_n_layers"])?,
            );
            kv.u32(&k("expert_used_count"), base::int32(&hp, &["moe_top_k"])?);
        }
        Ok(())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        match nomic_unigram(cx)? {
            true => {
                let mask = nomic_moe(cx.hp()).then_some(250_001);
                xlmroberta_vocab_with(cx, kv, mask)
            }
            false => Bert.set_vocab(cx, kv),
        }
    }

    /// The experts' biases left out.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if name.contains("mlp.experts.bias") {
            return None;
        }
        bert_filter(name)
    }

    /// The experts' matrices (`[experts · n_inner, n_embd]`) as `[experts, n_inner, n_embd]`,
    /// the down projection's transposed to `[experts, n_embd, n_inner]`.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let (up, down) = (
            name.contains("mlp.experts.mlp.w1"),
            name.contains("mlp.experts.mlp.w2"),
        );
        if !up && !down {
            return bert_tensor(cx, name, Rearrange::default());
        }
        let hp = cx.hp();
        let n = hp.int(&["num_local_experts", "num_experts"])?;
        let (inner, embd) = (hp.int(&["n_inner"])?, hp.int(&["n_embd"])?);
        if shape.iter().product::<u64>() != n * inner * embd {
            return Err(Error::reference(format!(
                "RuntimeError: {name} of shape {shape:?} cannot be viewed as [{n}, {inner}, {embd}]"
            )));
        }
        let view = match down {
            true => View::transposed(n, inner, embd),
            false => View {
                offset: 0,
                axes: [(n, inner * embd), (inner, embd), (embd, 1)],
                three: true,
            },
        };
        bert_tensor(cx, &format!("{name}.weight"), view.alone())
    }
}
