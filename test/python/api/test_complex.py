"""Complex tensors as pairs of real ones (nova.frontend.complex_pairs), against
eager: torch.complex / polar / view_as_complex / view_as_real, arithmetic,
abs / angle / sgn, complex inputs and results, and a Llama block written as
Meta's reference code writes rotary embeddings, in inference and training."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import nova


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


X, Y = _randn(4, 6), _randn(4, 6, seed=1)
CASES = {
    "polar_abs": (lambda a, b: torch.polar(a.abs(), b).abs(), (X, Y)),
    "real_imag": (lambda a, b: torch.complex(a, b).real * 2 + torch.complex(a, b).imag, (X, Y)),
    "exp_angle": (lambda a, b: (torch.complex(a, b) * 1j).exp().angle(), (X, Y)),
    "div": (lambda a, b: torch.view_as_real(torch.complex(a, b) / torch.complex(b, a + 3)),
            (X, Y)),
    "complex_result": (lambda a, b: torch.complex(a, b) * (2 - 1j) + 1, (X, Y)),
    # torch.complex broadcasts its parts (OpInfo samples [5] with [], [5, 1] with [5]).
    "complex_broadcasts": (lambda a, b: (torch.complex(a, b[0, 0]), torch.complex(a[:, :1], b[0])),
                           (X, Y)),
    "conj_sum": (lambda a, b: torch.view_as_real(torch.complex(a, b).conj().sum(0)), (X, Y)),
    "matmul": (lambda a, b: torch.view_as_real(torch.complex(a, b) @ torch.complex(b, a).T),
               (X, Y)),
    "sgn_cat": (lambda a, b: torch.view_as_real(
        torch.cat([torch.complex(a, b).sgn(), torch.complex(b, a)], 1)), (X, Y)),
    "norm": (lambda a, b: torch.linalg.vector_norm(torch.complex(a, b), dim=1), (X, Y)),
    "pad_real_value": (lambda z: (torch.nn.functional.pad(z, (1, 2), value=1.5),
                                  torch.nn.functional.pad(z, (0, 1, 1, 0))),
                       (torch.complex(X, Y),)),  # 1.5 pads as 1.5 + 0j
    "parts_of_an_input": (lambda z: (z.real, z.imag * 2, torch.isreal(z), torch.view_as_real(z)),
                          (torch.complex(X, Y),)),
    "diff_vector_matmul": (lambda z: (torch.diff(z, dim=1), z[0] @ z[1]),
                           (torch.complex(X, Y),)),  # copy, prims.squeeze
    "eye": (lambda z: z @ torch.eye(z.shape[1], dtype=torch.complex64) * 2,
            (torch.complex(X, Y),)),
    "identity": (lambda z: z.contiguous(), (torch.complex(X, Y),)),
    "empty_result": (lambda z: z[:0] * 2, (torch.complex(X, Y),)),
    # Strides and offset count complex elements (of the input, and of a
    # computed complex tensor): twice as long on the interleaved pairs.
    "as_strided": (lambda z: (torch.as_strided(z, (3, 2), (1, 6), 2),
                              torch.as_strided(z * 2j, (2, 2, 2), (12, 1, 5))),
                   (torch.complex(X, Y),)),
    "complex_first_input": (lambda z, x: torch.view_as_real(z * x), (torch.complex(X, Y), X)),
    "complex_input": (lambda x, f: torch.view_as_real(
        torch.view_as_complex(x.reshape(2, 8, 4, 2)) * f).flatten(-2),
        (_randn(2, 8, 8), torch.polar(torch.ones(8, 4), _randn(8, 4, seed=2)))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_complex_ops_match_eager(name: str) -> None:
    fn, args = CASES[name]
    out = nova.compile(_Fn(fn), *args)(*args)
    torch.testing.assert_close(out, fn(*args), rtol=1e-4, atol=1e-5)


# A Llama block with Meta's reference rotary embeddings (llama/model.py).
def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
    freqs_cis = freqs_cis.view(*shape)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(torch.nn.Module):
    def __init__(self, dim: int = 32, n_heads: int = 4, hidden: int = 64, seq: int = 8) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(dim, dim, bias=False)
                                              for _ in range(4))
        self.w1 = torch.nn.Linear(dim, hidden, bias=False)
        self.w2 = torch.nn.Linear(hidden, dim, bias=False)
        self.w3 = torch.nn.Linear(dim, hidden, bias=False)
        self.attention_norm, self.ffn_norm = RMSNorm(dim), RMSNorm(dim)
        # A plain attribute, as in Meta's Transformer (not a buffer).
        self.freqs_cis = precompute_freqs_cis(self.head_dim, seq * 2)

    def attention(self, x, freqs_cis, mask):
        b, s, _ = x.shape
        xq, xk, xv = (w(x).view(b, s, self.n_heads, self.head_dim)
                      for w in (self.wq, self.wk, self.wv))
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        xq, xk, xv = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / self.head_dim ** 0.5 + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        return self.wo(torch.matmul(scores, xv).transpose(1, 2).contiguous().view(b, s, -1))

    def forward(self, x):
        s = x.shape[1]
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        h = x + self.attention(self.attention_norm(x), self.freqs_cis[:s], mask)
        y = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(y)) * self.w3(y))


def test_llama_block_with_complex_rotary_embeddings_matches_eager() -> None:
    torch.manual_seed(0)
    block = LlamaBlock().eval()
    x = torch.randn(2, 8, 32)
    torch.testing.assert_close(nova.compile(block, x)(x), block(x), rtol=1e-4, atol=1e-5)


def test_llama_block_with_complex_rotary_embeddings_trains_like_eager() -> None:
    torch.manual_seed(0)
    block = LlamaBlock()
    reference = copy.deepcopy(block)
    x, target = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    optimizer = torch.optim.AdamW(block.parameters(), lr=1e-2)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    step = nova.compile_train_step(block, F.mse_loss, optimizer, x, target, keep_grads=True)
    for _ in range(3):
        loss = step(x, target)
        reference_optimizer.zero_grad()
        expected = F.mse_loss(reference(x), target)
        expected.backward()
        torch.testing.assert_close(torch.as_tensor(loss), expected.detach(), rtol=1e-4, atol=1e-6)
        grads = step.grads()
        for name, parameter in reference.named_parameters():
            torch.testing.assert_close(grads[name], parameter.grad, rtol=1e-4, atol=1e-5)
        reference_optimizer.step()


def test_complex_backward_of_abs_and_polar_matches_eager() -> None:
    """Gradients through complex ops built from parameters (polar, mul, abs)."""
    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.magnitude = torch.nn.Parameter(torch.rand(6) + 0.5)
            self.phase = torch.nn.Parameter(torch.randn(6))

        def forward(self, x):
            z = torch.polar(self.magnitude, self.phase) * torch.complex(x, x.flip(-1))
            return z.abs() + torch.view_as_real(z).sum(-1)

    torch.manual_seed(0)
    model = Model()
    reference = copy.deepcopy(model)
    x, target = torch.randn(3, 6), torch.randn(3, 6)
    step = nova.compile_train_step(model, F.mse_loss,
                                   torch.optim.AdamW(model.parameters(), lr=1e-2),
                                   x, target, keep_grads=True)
    loss = step(x, target)
    expected = F.mse_loss(reference(x), target)
    expected.backward()
    torch.testing.assert_close(torch.as_tensor(loss), expected.detach(), rtol=1e-4, atol=1e-6)
    for name, parameter in reference.named_parameters():
        torch.testing.assert_close(step.grads()[name], parameter.grad, rtol=1e-4, atol=1e-5)


def test_unsupported_complex_op_names_the_line() -> None:
    fn = lambda a, b: torch.view_as_real(torch.complex(a, b).sqrt())  # noqa: E731
    with pytest.raises(nova.NovaError, match="on a complex tensor"):
        nova.compile(_Fn(fn), X, Y)
