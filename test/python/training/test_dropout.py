"""Dropout in compiled training steps: the on-chip generator against its
references, masks from the per-step seed, and the step against the same
step run in torch eager (same masks)."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.frontend import random_bits as rb
from nova.frontend.dropout import RandomStream, keep_mask
from nova.frontend.errors import NovaExportError
from nova.frontend.train_export import step_function
from nova.training import TrainStepError

RTOL, ATOL = 1e-4, 1e-5


class _Bits(torch.nn.Module):
    def forward(self, seed):
        return rb.random_bits(seed, 7, (16, 33)), rb.uniform(seed, 100_000, (256, 256))


def test_generator_on_nova_is_bit_exact_and_uniform():
    seed = torch.tensor(rb.step_seed(1234, 5))
    program = nova.compile(_Bits(), seed)
    bits, uniforms = program(seed)
    eager_bits, eager_uniforms = _Bits()(seed)
    assert torch.equal(bits, eager_bits)
    assert torch.equal(uniforms, eager_uniforms)
    # The textbook SplitMix64 in Python ints.
    reference = [rb.signed64(v) for v in rb.reference_bits(int(seed), 7, 16 * 33)]
    assert bits.flatten().tolist() == reference
    assert uniforms.dtype == torch.float32
    assert 0.0 <= float(uniforms.min()) and float(uniforms.max()) < 1.0
    assert abs(float(uniforms.mean()) - 0.5) < 0.01
    assert abs(float(uniforms.var()) - 1 / 12) < 0.005
    # Another seed (the next call's) gives another stream.
    other, _ = program(torch.tensor(rb.step_seed(1234, 6)))
    assert (other != bits).float().mean() > 0.99


class _TopBits(torch.nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.shape = shape

    def forward(self, seed):
        return rb.random_top_bits(seed, 11, self.shape)


@pytest.mark.parametrize("shape", [(16, 33), (3, 5, 7), (1,), ()])
def test_top_bits_shortcut_is_the_full_hash(shape):
    """Dropout's masks and uniforms take SplitMix64's top 24 bits from a
    shorter program (row + column states, no last xorshift): the same bits
    as the full hash, in eager and on Nova."""
    seed = torch.tensor(rb.step_seed(99, 3))
    want = rb.top_bits(rb.random_bits(seed, 11, shape))
    assert torch.equal(rb.random_top_bits(seed, 11, shape), want)
    assert torch.equal(nova.compile(_TopBits(shape), seed)(seed), want)


class _Keep(torch.nn.Module):
    """``keep`` (random_keep or random_keep_pairs) at offset 11, as int64."""

    def __init__(self, shape, threshold, keep=rb.random_keep):
        super().__init__()
        self.shape, self.threshold, self.keep = shape, threshold, keep

    def forward(self, seed):
        return self.keep(seed, 11, self.shape, self.threshold).to(torch.int64)


@pytest.mark.parametrize("shape", [(16, 33), (3, 5, 7), (1,), ()])
def test_keep_decisions_equal_the_reference_in_eager_and_on_nova(shape):
    """Dropout's keep decisions (one signed compare of SplitMix64's output,
    no shift to its top bits) are reference_keep's, in eager and on Nova."""
    seed = torch.tensor(rb.step_seed(99, 3))
    numel = 1
    for size in shape:
        numel *= size
    threshold = rb.keep_threshold(0.7)
    want = torch.tensor(rb.reference_keep(int(seed), 11, numel, threshold),
                        dtype=torch.bool).reshape(shape)
    assert torch.equal(rb.random_keep(seed, 11, shape, threshold), want)
    got = nova.compile(_Keep(shape, threshold), seed)(seed)
    assert torch.equal(got, want.to(torch.int64))


@pytest.mark.parametrize("shape", [(16, 33), (3, 5, 7), (7,), ()])
def test_paired_keep_decisions_equal_the_reference_in_eager_and_on_nova(shape):
    """Two decisions from each hash (the top half of the rows from the top 24
    bits, the bottom half from bits 16..39): reference_keep_pairs', in eager
    and on Nova, odd row counts and single rows included."""
    seed = torch.tensor(rb.step_seed(99, 3))
    threshold = rb.keep_threshold(0.7)
    want = torch.tensor(rb.reference_keep_pairs(int(seed), 11, shape, threshold),
                        dtype=torch.bool).reshape(shape)
    assert torch.equal(rb.random_keep_pairs(seed, 11, shape, threshold), want)
    got = nova.compile(_Keep(shape, threshold, rb.random_keep_pairs), seed)(seed)
    assert torch.equal(got, want.to(torch.int64))


@pytest.mark.parametrize("threshold", [0, 1 << rb.UNIFORM_BITS])
def test_keep_decisions_at_the_ends(threshold):
    # Nothing kept below 0, everything at 2**24 (where the compare's cut would overflow).
    keep = rb.random_keep(torch.tensor(5), 0, (4, 8), threshold)
    assert keep.shape == (4, 8) and bool(keep.all() if threshold else not keep.any())


@pytest.mark.parametrize("pairs", [False, True], ids=["one", "pairs"])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_keep_mask_is_statistically_sound(p, pairs):
    """On a 1024 x 1024 mask: the kept fraction is 1 - p, and neighbouring
    decisions (along a row, along a column, half the rows apart: with
    ``pairs`` the two decisions of one hash) are uncorrelated, each within 4
    standard errors."""
    rows = cols = 1024
    stream = RandomStream(torch.tensor(rb.step_seed(21, 0)))
    keep = keep_mask(stream, (rows, cols), p, pairs=pairs).double()
    n = rows * cols
    q = 1 - p
    assert abs(float(keep.mean()) - q) < 4 * (q * p / n) ** 0.5
    for a, b in ((keep[:, 1:], keep[:, :-1]), (keep[1:], keep[:-1]),
                 (keep[: rows // 2], keep[rows // 2:])):
        a, b = a.flatten() - a.mean(), b.flatten() - b.mean()
        correlation = float((a * b).mean() / (a.square().mean() * b.square().mean()).sqrt())
        assert abs(correlation) < 4 / a.numel() ** 0.5, correlation


def _mlp(p1=0.3, p2=0.5, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Dropout(p1),
                               torch.nn.Linear(32, 32), torch.nn.Dropout(p2),
                               torch.nn.Linear(32, 4))


def _batches(n=3, rows=8):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(rows, 8, generator=generator), torch.randn(rows, 4, generator=generator))
            for _ in range(n)]


def _run(seed, batches, **options):
    model = _mlp()
    example = (batches or _batches(1))[0]
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                   torch.optim.SGD(model.parameters(), lr=0.1), *example,
                                   seed=seed, **options)
    return step, [step(*b) for b in batches]


def _eager_loss(step, batch):
    """The step's next call run in torch eager on the same arguments (same masks)."""
    fn = step_function(step.model, torch.nn.functional.mse_loss, step.layout, step.rule.update)
    return fn(*(torch.from_numpy(a) for a in step._arguments(list(batch), host=True)))[0]


def test_same_seed_same_losses_other_seed_other_losses():
    batches = _batches()
    step, losses = _run(0, batches)
    assert step.layout.seed and step.layout.input_names[-1] == "seed"
    _, again = _run(0, batches)
    _, other = _run(1, batches)
    assert [float(l) for l in losses] == [float(l) for l in again]
    assert all(float(a) != float(b) for a, b in zip(losses, other))
    assert step.calls == 3


@pytest.mark.parametrize("accumulation_steps", [1, 2])
def test_dropout_step_matches_eager_with_the_same_masks(accumulation_steps):
    batches = _batches()
    model = _mlp()
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                   torch.optim.SGD(model.parameters(), lr=0.1), *batches[0],
                                   seed=7, accumulation_steps=accumulation_steps)
    for batch in batches:
        expected = _eager_loss(step, batch)
        torch.testing.assert_close(step(*batch), expected, rtol=RTOL, atol=ATOL)


def test_micro_batches_get_different_masks():
    # Two identical micro-batches: were the mask shared, the accumulated loss
    # would be the first micro-batch's, which a step without accumulation
    # computes with the same counters.
    x, y = _batches(1, rows=4)[0]
    _, (single,) = _run(3, [(x, y)])
    _, (accumulated,) = _run(3, [(torch.cat([x, x]), torch.cat([y, y]))], accumulation_steps=2)
    assert float(accumulated) != float(single)


class _InplaceAndNative(torch.nn.Module):
    """``nn.Dropout(inplace=True)`` (the step is re-traced functionalized) and
    ``torch.native_dropout`` called directly."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)
        self.dropout = torch.nn.Dropout(0.4, inplace=True)

    def forward(self, x):
        h = torch.relu(self.dropout(self.a(x)))
        return self.b(torch.native_dropout(h, 0.2, True)[0])


def test_inplace_and_native_dropout_match_eager():
    torch.manual_seed(0)
    model = _InplaceAndNative()
    batches = _batches(2)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                   torch.optim.SGD(model.parameters(), lr=0.1), *batches[0],
                                   seed=2)
    assert step.layout.seed
    for batch in batches:
        expected = _eager_loss(step, batch)
        torch.testing.assert_close(step(*batch), expected, rtol=RTOL, atol=ATOL)


class _Scale(torch.nn.Module):
    def __init__(self, shape, p):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(shape))
        self.dropout = torch.nn.Dropout(p)

    def forward(self, x):
        return self.dropout(x * self.weight)


@pytest.mark.parametrize("p", [0.3, 1.0])
def test_mask_kept_fraction_and_scale(p):
    shape = (256, 256)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2))
    model = _Scale(shape, p)
    step = nova.compile_train_step(model, lambda y: y.sum(),
                                   torch.optim.SGD(model.parameters(), lr=0.0), x,
                                   seed=11, keep_grads=True)
    step(x)
    grad = step.grads()["weight"]  # x * mask / (1 - p)
    expected_mask = keep_mask(RandomStream(torch.tensor(rb.step_seed(11, 0))), shape, p)
    kept = grad != 0
    if p == 1.0:
        assert not kept.any() and not expected_mask.any()
        return
    assert torch.equal(kept, expected_mask)
    fraction = float(kept.float().mean())
    assert abs(fraction - (1 - p)) < 0.01 * (1 - p), fraction
    # Kept values: torch's dropout arithmetic, x * (1 / (1 - p)) in float32 ...
    noise = torch.ones(()) / (1 - p)
    assert torch.equal(grad[kept], x[kept] * noise)
    # ... which is x / (1 - p) to the rounding of one float32 multiply.
    torch.testing.assert_close(grad[kept], x[kept] / (1 - p), rtol=2.4e-7, atol=0)


def test_p0_emits_no_random_ops_and_matches_torch():
    batches = _batches(2)
    model, reference = _mlp(0.0, 0.0), _mlp(0.0, 0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, *batches[0])
    assert not step.layout.seed and "seed" not in step.layout.input_names
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for batch in batches:
        ref_optimizer.zero_grad()
        expected = torch.nn.functional.mse_loss(reference(batch[0]), batch[1])
        expected.backward()
        ref_optimizer.step()
        torch.testing.assert_close(step(*batch), expected.detach(), rtol=RTOL, atol=ATOL)


def test_state_dict_continues_the_random_stream():
    batches = _batches(3)
    _, losses = _run(5, batches)
    first, _ = _run(5, batches[:2])
    saved = first.state_dict()
    assert saved["random"] == {"seed": 5, "calls": 2}
    resumed, _ = _run(0, [])
    resumed.load_state_dict(saved)
    assert (resumed.seed, resumed.calls) == (5, 2)
    assert float(resumed(*batches[2])) == float(losses[2])


def test_bad_seed_and_unsupported_dropouts_raise():
    x, y = _batches(1)[0]
    model = _mlp()
    with pytest.raises(TrainStepError, match="seed must be an int"):
        nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                torch.optim.SGD(model.parameters(), lr=0.1), x, y, seed=1.5)

    class Channel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 4)

        def forward(self, x):
            return torch.nn.functional.dropout1d(self.linear(x)[None], 0.2, training=True)[0]

    model = Channel()
    with pytest.raises(NovaExportError, match="dropout1d with p=0.2"):
        nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                torch.optim.SGD(model.parameters(), lr=0.1), x, y)


def test_masks_hash_on_the_tensors_shape_not_a_flat_vector():
    """The counters are built [rows, last dim], so SplitMix64's rounds run on
    2-D tiles (a flat [numel] vector was cut into 1-D tiles of a few hundred
    elements: ~170 instructions per thousand elements instead of ~1)."""
    model = torch.nn.Sequential(torch.nn.Linear(96, 96), torch.nn.Dropout(0.1))
    x = torch.randn(4, 64, 96)
    step = nova.compile_train_step(model, lambda y: y.square().mean(),
                                   torch.optim.SGD(model.parameters(), lr=0.1), x)
    linalg = step.program.stages["linalg"]
    assert f"tensor<{4 * 64 * 96}xi64>" not in linalg
    assert "tensor<256x96xi64>" in linalg
