"""The tiny test models load by path through the Auto classes, as real models would."""

from __future__ import annotations

import torch

from causalkg.testing import tiny_models


def test_tiny_models_load_and_run(tmp_path):
    from transformers import (AutoModelForCausalLM, AutoModelForQuestionAnswering,
                              AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer)

    qa = tiny_models.tiny_qa_model(tmp_path / "qa")
    tok = AutoTokenizer.from_pretrained(qa)
    enc = tok("What caused the tsunami?", "The earthquake caused the tsunami.", return_tensors="pt",
              return_offsets_mapping=True)
    enc.pop("offset_mapping")
    out = AutoModelForQuestionAnswering.from_pretrained(qa)(**enc)
    assert out.start_logits.shape == enc["input_ids"].shape

    nli = tiny_models.tiny_nli_model(tmp_path / "nli")
    m = AutoModelForSequenceClassification.from_pretrained(nli)
    assert m.config.id2label[2] == "ENTAILMENT"

    lm = tiny_models.tiny_causal_lm(tmp_path / "lm")
    m = AutoModelForCausalLM.from_pretrained(lm)
    ids = AutoTokenizer.from_pretrained(lm)("war, so famine", return_tensors="pt")["input_ids"]
    assert m(ids).logits.shape[-1] == 30522

    s2s = tiny_models.tiny_seq2seq(tmp_path / "s2s")
    m = AutoModelForSeq2SeqLM.from_pretrained(s2s)
    tok = AutoTokenizer.from_pretrained(s2s)
    inputs = tok(["Does war cause famine?"], return_tensors="pt")
    gen = m.generate(**inputs, max_new_tokens=3, do_sample=False)
    # one sequence: the decoder start token, then 1 to 3 new tokens (fewer if it ends early)
    assert gen.shape[0] == 1 and 2 <= gen.shape[1] <= 4
    assert gen[0, 0].item() == m.config.decoder_start_token_id
    assert torch.equal(gen, m.generate(**inputs, max_new_tokens=3, do_sample=False))  # greedy: the same again
