"""Small model parts: LoRA layers, sampling, losses, initialisation and counting helpers.

Templates of ``tests.realistic.modeling_more`` (``$P`` a class prefix, ``$p`` a function
prefix).
"""

from __future__ import annotations

LORA = '''
class ${P}LoRALinear(nn.Linear):
    """A linear layer with a trainable low-rank update ``B @ A`` (LoRA)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        r: int = $rank,
        alpha: int = 16,
        dropout: float = 0.05,
        **kwargs: Any,
    ) -> None:
        super().__init__(in_features, out_features, **kwargs)
        self.r = r
        self.scaling = alpha / r
        self.lora_A = nn.Parameter(torch.zeros(r, in_features))
        self.lora_B = nn.Parameter(torch.zeros(out_features, r))
        self.lora_dropout = nn.Dropout(dropout)
        self.merged = False
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def merge(self) -> None:
        """Fold the update into the weight for inference."""
        if not self.merged:
            self.weight.data += (self.lora_B @ self.lora_A) * self.scaling
            self.merged = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        if self.merged:
            return out
        update = self.lora_dropout(x) @ self.lora_A.t() @ self.lora_B.t()
        return out + update * self.scaling


def ${p}_mark_only_lora_trainable(model: nn.Module, bias: str = "none") -> None:
    """Freeze everything but the LoRA matrices (and, if asked, the biases)."""
    for name, param in model.named_parameters():
        param.requires_grad = "lora_" in name
    if bias == "all":
        for name, param in model.named_parameters():
            if name.endswith(".bias"):
                param.requires_grad = True


def ${p}_lora_state_dict(model: nn.Module) -> Dict[str, torch.Tensor]:
    return {k: v for k, v in model.state_dict().items() if "lora_" in k}
'''

SAMPLING = '''
def ${p}_top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Mask the tail of the distribution beyond cumulative probability ``top_p``."""
    sorted_logits, order = torch.sort(logits, descending=True)
    cumulative = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    remove = cumulative > top_p
    remove[..., 1:] = remove[..., :-1].clone()  # keep the first token above the line
    remove[..., 0] = False
    mask = remove.scatter(-1, order, remove)
    return logits.masked_fill(mask, float("-inf"))


def ${p}_sample(
    logits: torch.Tensor,
    temperature: float = $temperature,
    top_k: Optional[int] = None,
    top_p: float = 1.0,
    generator: Optional[torch.Generator] = None,
) -> torch.Tensor:
    logits = logits[:, -1] / max(temperature, 1e-5)
    if top_k is not None:
        values, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits = torch.where(logits < values[:, [-1]], -float("inf"), logits)
    if top_p < 1.0:
        logits = ${p}_top_p_filter(logits, top_p)
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator)
'''

LOSSES = '''
def ${p}_cross_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    z_loss: float = 0.0,
) -> torch.Tensor:
    """Token-level cross entropy with optional smoothing and a z-loss term."""
    logits = logits.reshape(-1, logits.size(-1)).float()
    targets = targets.reshape(-1)
    loss = F.cross_entropy(
        logits, targets, ignore_index=ignore_index, label_smoothing=label_smoothing
    )
    if z_loss > 0.0:
        valid = targets != ignore_index
        log_z = torch.logsumexp(logits[valid], dim=-1)
        loss = loss + z_loss * (log_z**2).mean()
    return loss


def ${p}_chunked_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, chunk_size: int = $chunk
) -> torch.Tensor:
    """The same loss in chunks of rows, so the fp32 upcast never holds the full logits."""
    logits = logits.reshape(-1, logits.size(-1))
    targets = targets.reshape(-1)
    total = logits.new_zeros((), dtype=torch.float32)
    count = 0
    for start in range(0, logits.size(0), chunk_size):
        rows = slice(start, start + chunk_size)
        total += F.cross_entropy(logits[rows].float(), targets[rows], reduction="sum")
        count += int((targets[rows] != -100).sum())
    return total / max(count, 1)
'''

INIT = '''
def ${p}_init_weights(module: nn.Module, std: float = 0.02, zero_bias: bool = True) -> None:
    """Initialise linears and embeddings with a truncated normal."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.trunc_normal_(module.weight, std=std, a=-3 * std, b=3 * std)
    if isinstance(module, nn.Linear) and module.bias is not None and zero_bias:
        nn.init.zeros_(module.bias)
    elif isinstance(module, (nn.LayerNorm, nn.GroupNorm)):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def ${p}_count_parameters(model: nn.Module, trainable_only: bool = False) -> Dict[str, int]:
    """Parameters per top-level child, and the total."""
    counts: Dict[str, int] = {}
    for name, child in model.named_children():
        params = (p for p in child.parameters() if p.requires_grad or not trainable_only)
        counts[name] = sum(p.numel() for p in params)
    counts["total"] = sum(counts.values())
    return counts


def ${p}_freeze(module: nn.Module, names: Iterable[str] = ()) -> List[str]:
    """Freeze the parameters whose names start with one of ``names``; return them."""
    frozen = []
    prefixes = tuple(names)
    for name, param in module.named_parameters():
        if not prefixes or name.startswith(prefixes):
            param.requires_grad_(False)
            frozen.append(name)
    return frozen
'''
