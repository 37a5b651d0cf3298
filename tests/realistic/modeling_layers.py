"""Layers a transformer tower is built from: norms, rotary helpers, the kv cache.

Templates of ``tests.realistic.modeling``, named by tower (``$P``, ``$p``, ``$Norm``).
"""

from __future__ import annotations

RMSNORM = '''
class $Norm(nn.Module):
    """Root-mean-square norm: no mean subtraction, no bias."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # normalise in fp32: bf16 loses too much in the mean of squares
        output = self._norm(x.float()).type_as(x)
        return output * self.weight

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"
'''

LAYERNORM = '''
class $Norm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no switch for it before 2.1)."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
'''

ROPE = '''
def ${p}_rope_cache(
    seq_len: int,
    n_elem: int,
    dtype: torch.dtype,
    device: Optional[torch.device] = None,
    base: int = 10000,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Cosines and sines of the rotary embedding for positions ``0 .. seq_len - 1``."""
    theta = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))
    positions = torch.arange(seq_len, device=device, dtype=torch.float32)
    angles = torch.outer(positions, theta).repeat(1, 2)
    # the cache is kept in the compute dtype; recomputing it each step costs more
    return angles.cos().to(dtype), angles.sin().to(dtype)


def ${p}_rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.size(-1) // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def ${p}_apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` (batch, heads, time, head_dim) by the cached angles."""
    head_size = x.size(-1)
    rotated = ${p}_rotate_half(x)
    roped = (x * cos[..., :head_size]) + (rotated * sin[..., :head_size])
    return roped.type_as(x)
'''

CACHE = '''
class ${P}KVCache(nn.Module):
    """Keys and values of past positions, for incremental decoding."""

    def __init__(
        self,
        batch_size: int,
        n_heads: int,
        max_len: int,
        head_dim: int,
        dtype: Optional[torch.dtype] = None,
        device: Optional[torch.device] = None,
    ) -> None:
        super().__init__()
        shape = (batch_size, n_heads, max_len, head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def forward(
        self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        # move the cache to the dtype of the incoming keys the first time round
        self.k = self.k.to(k.dtype)
        self.v = self.v.to(v.dtype)
        self.k.index_copy_(2, input_pos, k)
        self.v.index_copy_(2, input_pos, v)
        return self.k, self.v

    def reset(self) -> None:
        self.k.zero_()
        self.v.zero_()
'''
