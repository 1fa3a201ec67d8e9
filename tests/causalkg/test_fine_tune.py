"""The one training loop (core.models.fine_tune) that the QA head, the span tagger, the gate and
the pair verifier train with: it learns, it keeps the best checkpoint, it is reproducible."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from causalkg.core.models import bucketed_batches, fine_tune  # noqa: E402


def _problem(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 5, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.1
    return x, y


def _train(steps: int, *, evaluate=None, eval_every: int = 0, seed: int = 0):
    torch.manual_seed(seed)
    x, y = _problem()
    model = torch.nn.Sequential(torch.nn.Linear(5, 1), torch.nn.Dropout(0.1))

    def loss_of(idx):
        return torch.nn.functional.mse_loss(model(x[idx]).squeeze(-1), y[idx])

    batches = bucketed_batches([1] * len(x), 8, steps, random.Random(seed))
    run = fine_tune(model, batches, loss_of, params=list(model.parameters()), steps=steps, learning_rate=0.05,
                    warmup=0.1, desc="test", evaluate=evaluate, eval_every=eval_every)
    return model, run, x, y


def test_it_learns_and_leaves_eval_mode():
    model0, _, x, y = _train(1)
    before = torch.nn.functional.mse_loss(model0(x).squeeze(-1), y).item()
    model, run, x, y = _train(200)
    after = torch.nn.functional.mse_loss(model(x).squeeze(-1), y).item()
    assert not model.training
    assert after < before / 10
    assert run.history == [] and run.best_step == 0


def test_the_best_checkpoint_is_kept_and_recorded():
    scores = iter([0.5, 0.9, 0.1])
    seen = {}
    holder = {}

    def evaluate():
        model = holder["model"]
        assert not model.training  # scored in eval mode
        step = len(seen) * 2 + 2
        seen[step] = [p.detach().clone() for p in model.parameters()]
        s = next(scores)
        return s, {"score": s}, f"score {s}"

    torch.manual_seed(0)
    x, y = _problem()
    model = torch.nn.Sequential(torch.nn.Linear(5, 1), torch.nn.Dropout(0.1))
    holder["model"] = model

    def loss_of(idx):
        return torch.nn.functional.mse_loss(model(x[idx]).squeeze(-1), y[idx])

    run = fine_tune(model, bucketed_batches([1] * 64, 8, 6, random.Random(0)), loss_of,
                    params=list(model.parameters()), steps=6, learning_rate=0.05, warmup=0.1, desc="test",
                    evaluate=evaluate, eval_every=2)
    assert [h["step"] for h in run.history] == [2, 4, 6]
    assert [h["score"] for h in run.history] == [0.5, 0.9, 0.1]
    assert all(set(h) == {"step", "loss", "score", "seconds"} for h in run.history)
    assert run.best_step == 4 and run.best_score == 0.9
    for p, kept in zip(model.parameters(), seen[4]):
        assert torch.equal(p, kept)
    assert not all(torch.equal(p, last) for p, last in zip(model.parameters(), seen[6]))


def test_same_seed_same_weights():
    a, *_ = _train(30, seed=3)
    b, *_ = _train(30, seed=3)
    c, *_ = _train(30, seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))
