"""Ordinary model code: a decoder-only transformer's parts, named per tower (``$P``).

``transformer(rng, P)`` returns the chunks of one tower (config, norm, rotary helpers,
cache, attention, MLP, block, model) with seeded sizes and variants; a model file holds
one to three towers and the extra parts of ``tests.realistic.modeling_more``.
"""

from __future__ import annotations

import random

from tests.realistic.modeling_layers import CACHE, LAYERNORM, RMSNORM, ROPE
from tests.realistic.source import fill

_FIELDS = [
    ("attn_dropout", "float", "0.0", None),
    ("rotary_percentage", "float", "1.0", "share of each head that is rotated"),
    ("parallel_residual", "bool", "False", "attention and MLP read the same input"),
    ("tie_embeddings", "bool", "True", None),
    ("init_std", "float", "0.02", None),
    ("layer_scale_init", "Optional[float]", "None", None),
    ("max_batch_size", "int", "32", "rows of the kv cache"),
    ("pad_token_id", "int", "0", None),
    ("eos_token_id", "int", "2", None),
    ("logit_softcap", "Optional[float]", "None", None),
    ("scale_attn_by_layer", "bool", "False", None),
    ("gradient_checkpointing", "bool", "False", "recompute blocks in backward"),
    ("label_smoothing", "float", "0.0", None),
    ("z_loss_weight", "float", "0.0", "PaLM-style auxiliary loss on the log-partition"),
    ("embedding_dropout", "float", "0.0", None),
    ("residual_in_fp32", "bool", "True", None),
    ("name", "str", '"base"', None),
]

_CONFIG = '''
@dataclass
class ${P}Config:
    """Hyper-parameters of the ${P} model.

    The defaults describe the smallest model we train; the presets in
    ``${P}Config.from_name`` list the others.
    """

    vocab_size: int = $vocab
    padding_multiple: int = 64
    block_size: int = $block
    n_layer: int = $layers
    n_head: int = $heads
    n_embd: int = $width
    intermediate_size: Optional[int] = None
    n_query_groups: Optional[int] = None  # None: one group per head (plain MHA)
    dropout: float = 0.0
    bias: bool = $bias
    norm_eps: float = 1e-5
    rope_base: int = 10000
$extra
    def __post_init__(self) -> None:
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"n_embd={self.n_embd} is not a multiple of n_head={self.n_head}")
        if self.intermediate_size is None:
            # the usual 8/3 ratio of gated MLPs, rounded to a multiple of 256
            hidden = int(8 * self.n_embd / 3)
            self.intermediate_size = 256 * ((hidden + 255) // 256)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def padded_vocab_size(self) -> int:
        multiple = self.padding_multiple
        return ((self.vocab_size + multiple - 1) // multiple) * multiple

    @classmethod
    def from_name(cls, name: str, **overrides: Any) -> "${P}Config":
        if name not in ${PU}_PRESETS:
            known = ", ".join(sorted(${PU}_PRESETS))
            raise ValueError(f"unknown preset {name!r}; known presets: {known}")
        values = dict(${PU}_PRESETS[name])
        values.update(overrides)
        return cls(**values)

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


${PU}_PRESETS: Dict[str, Dict[str, Any]] = {
$presets}
'''

_ATTENTION = '''
class ${P}Attention(nn.Module):
    """Causal self-attention with grouped query heads and rotary positions."""

    def __init__(self, config: ${P}Config, layer_idx: int = 0) -> None:
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.n_head = config.n_head
        self.head_dim = config.head_dim
        self.n_kv_head = $kv_heads
        qkv_dim = (self.n_head + 2 * self.n_kv_head) * self.head_dim
        self.qkv = nn.Linear(config.n_embd, qkv_dim, bias=config.bias)
        self.proj = nn.Linear(self.n_head * self.head_dim, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.kv_cache: Optional[${P}KVCache] = None
        # flash attention is much faster but only exists in PyTorch >= 2.0
        self.flash = hasattr(F, "scaled_dot_product_attention")

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        input_pos: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        batch, steps, _ = x.size()
        qkv = self.qkv(x)
        q_size = self.n_head * self.head_dim
        kv_size = self.n_kv_head * self.head_dim
        q, k, v = qkv.split([q_size, kv_size, kv_size], dim=-1)
        q = q.view(batch, steps, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(batch, steps, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = v.view(batch, steps, self.n_kv_head, self.head_dim).transpose(1, 2)
        q = ${p}_apply_rope(q, cos, sin)
        k = ${p}_apply_rope(k, cos, sin)
        if input_pos is not None:
            if self.kv_cache is None:
                raise TypeError("call build_kv_cache() before decoding with input_pos")
            k, v = self.kv_cache(input_pos, k, v)
        if self.n_kv_head != self.n_head:
            repeats = self.n_head // self.n_kv_head
            k = k.repeat_interleave(repeats, dim=1)
            v = v.repeat_interleave(repeats, dim=1)
        y = self.scaled_dot_product_attention(q, k, v, mask)
        y = y.transpose(1, 2).contiguous().view(batch, steps, q_size)
        return self.resid_dropout(self.proj(y))

    def scaled_dot_product_attention(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor]
    ) -> torch.Tensor:
        dropout = self.config.dropout if self.training else 0.0
        if self.flash:
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=mask is None
            )
        scale = 1.0 / math.sqrt(self.head_dim)
        scores = (q @ k.transpose(-2, -1)) * scale
        if mask is None:
            length = q.size(-2)
            mask = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = F.softmax(scores.float(), dim=-1).type_as(q)
        probs = F.dropout(probs, p=dropout, training=self.training)
        return probs @ v

    def build_kv_cache(
        self, batch_size: int, max_len: int, device=None, dtype=None
    ) -> ${P}KVCache:
        self.kv_cache = ${P}KVCache(
            batch_size, self.n_kv_head, max_len, self.head_dim, dtype=dtype, device=device
        )
        return self.kv_cache
'''

_SWIGLU = '''
class ${P}MLP(nn.Module):
    """Gated feed-forward (SwiGLU): ``proj(silu(fc_1(x)) * fc_2(x))``."""

    def __init__(self, config: ${P}Config) -> None:
        super().__init__()
        hidden = config.intermediate_size
        self.fc_1 = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.fc_2 = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.proj = nn.Linear(hidden, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.silu(self.fc_1(x)) * self.fc_2(x)
        return self.dropout(self.proj(x))
'''

_GELU = '''
class ${P}MLP(nn.Module):
    """Two linear layers with a GELU between them."""

    def __init__(self, config: ${P}Config) -> None:
        super().__init__()
        hidden = 4 * config.n_embd
        self.fc = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.act = nn.GELU(approximate="$approx")
        self.proj = nn.Linear(hidden, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.proj(self.act(self.fc(x))))
'''

_BLOCK = '''
class ${P}Block(nn.Module):
    """One transformer layer: pre-norm attention and MLP with residuals."""

    def __init__(self, config: ${P}Config, layer_idx: int = 0) -> None:
        super().__init__()
        self.norm_1 = $Norm(config.n_embd, eps=config.norm_eps)
        self.attn = ${P}Attention(config, layer_idx=layer_idx)
        self.norm_2 = $Norm(config.n_embd, eps=config.norm_eps)
        self.mlp = ${P}MLP(config)
        self.parallel = $parallel

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        input_pos: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        h = self.attn(self.norm_1(x), cos, sin, mask, input_pos)
        if self.parallel:
            # GPT-J style: both branches read the block input
            return x + h + self.mlp(self.norm_2(x))
        x = x + h
        return x + self.mlp(self.norm_2(x))
'''

_MODEL = '''
class ${P}Model(nn.Module):
    """Token embedding, a stack of ``${P}Block`` and a language-model head."""

    def __init__(self, config: ${P}Config) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.padded_vocab_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(${P}Block(config, i) for i in range(config.n_layer))
        self.norm_f = $Norm(config.n_embd, eps=config.norm_eps)
        self.lm_head = nn.Linear(config.n_embd, config.padded_vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        cos, sin = ${p}_rope_cache(
            config.block_size, config.head_dim, torch.float32, base=config.rope_base
        )
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.apply(self._init_weights)
        # scaled init of the residual projections, as in GPT-2
        for name, param in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self, non_embedding: bool = True) -> int:
        total = sum(p.numel() for p in self.parameters())
        if non_embedding:
            total -= self.wte.weight.numel()
        return total

    def forward(
        self,
        idx: torch.Tensor,
        targets: Optional[torch.Tensor] = None,
        input_pos: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        _, steps = idx.size()
        if steps > self.config.block_size:
            raise ValueError(
                f"cannot attend to {steps} tokens, block size is {self.config.block_size}"
            )
        if input_pos is not None:
            cos, sin = self.cos.index_select(0, input_pos), self.sin.index_select(0, input_pos)
        else:
            cos, sin = self.cos[:steps], self.sin[:steps]
        x = self.drop(self.wte(idx))
        for block in self.blocks:
            x = block(x, cos, sin, None, input_pos)
        x = self.norm_f(x)
        if targets is None:
            # inference: only the last position is needed
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        loss = F.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
        )
        return logits, loss

    def optimizer_groups(self, weight_decay: float) -> List[Dict[str, Any]]:
        """Decay the matrices, not the biases, norms and embeddings."""
        decay, no_decay = [], []
        for name, param in self.named_parameters():
            if not param.requires_grad:
                continue
            (decay if param.dim() >= 2 and "wte" not in name else no_decay).append(param)
        return [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: Optional[int] = None,
    ) -> torch.Tensor:
        for _ in range(max_new_tokens):
            context = idx[:, -self.config.block_size :]
            logits, _ = self(context)
            logits = logits[:, -1, :] / max(temperature, 1e-5)
            if top_k is not None:
                kth, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < kth[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx
'''


def _config(rng: random.Random, P: str) -> str:
    extra = rng.sample(_FIELDS, rng.randint(4, len(_FIELDS)))
    lines = []
    for name, annotation, default, note in extra:
        lines.append(f"    {name}: {annotation} = {default}" + (f"  # {note}" if note else ""))
    presets = {}
    for _ in range(rng.randint(3, 8)):
        layers, width = rng.choice([12, 16, 24, 32, 40, 48]), rng.choice([768, 1024, 2048, 4096])
        presets[f"{P.lower()}-{layers}l-{width}"] = (
            f'    "{P.lower()}-{layers}l-{width}": dict(\n'
            f"        n_layer={layers},\n        n_head={width // 64},\n"
            f"        n_embd={width},\n        block_size={rng.choice([1024, 2048, 4096])},\n"
            "    ),\n"
        )
    return fill(
        _CONFIG,
        P=P,
        PU=P.upper(),
        vocab=rng.choice([32000, 50257, 50304, 65024]),
        block=rng.choice([1024, 2048, 4096]),
        layers=rng.choice([6, 12, 24]),
        heads=rng.choice([8, 12, 16]),
        width=rng.choice([768, 1024, 2048]),
        bias=rng.choice(["True", "False"]),
        extra="\n".join(lines) + "\n",
        presets="".join(presets.values()),
    )


def transformer(rng: random.Random, P: str) -> list[str]:
    """The chunks of one decoder tower named ``P`` (``P`` + Config, Attention, Block...)."""
    p = P.lower()
    norm = f"{P}RMSNorm" if rng.random() < 0.6 else f"{P}LayerNorm"
    norm_text = RMSNORM if norm.endswith("RMSNorm") else LAYERNORM
    kv_heads = rng.choice(["config.n_head", "config.n_query_groups or config.n_head"])
    mlp = _SWIGLU if rng.random() < 0.6 else _GELU
    values = dict(P=P, p=p, Norm=norm, approx=rng.choice(["none", "tanh"]))
    return [
        _config(rng, P),
        fill(norm_text, **values),
        fill(ROPE, **values),
        fill(CACHE, **values),
        fill(_ATTENTION, kv_heads=kv_heads, **values),
        fill(mlp, **values),
        fill(_BLOCK, parallel=rng.choice(["False", "config.n_layer > 32"]), **values),
        fill(_MODEL, **values),
    ]
