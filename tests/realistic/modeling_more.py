"""More ordinary model code: vision, convolutions, experts, adapters, sampling, losses.

Every template takes ``$P`` (a class prefix) and ``$p`` (a function prefix), so a file can
hold several towers. ``extras(rng, P)`` returns a seeded selection.
"""

from __future__ import annotations

import random

from tests.realistic.modeling_small import INIT, LORA, LOSSES, SAMPLING
from tests.realistic.source import fill

_VISION = '''
class ${P}PatchEmbed(nn.Module):
    """Split an image into patches and project each to ``embed_dim``."""

    def __init__(
        self,
        image_size: int = 224,
        patch_size: int = $patch,
        channels: int = 3,
        embed_dim: int = 768,
    ) -> None:
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"image size {image_size} is not a multiple of {patch_size}")
        self.grid = image_size // patch_size
        self.num_patches = self.grid * self.grid
        self.proj = nn.Conv2d(channels, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.proj(images)  # (batch, embed_dim, grid, grid)
        return x.flatten(2).transpose(1, 2)


class ${P}DropPath(nn.Module):
    """Stochastic depth: drop the whole residual branch of a sample."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.p == 0.0 or not self.training:
            return x
        keep = 1.0 - self.p
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        mask = x.new_empty(shape).bernoulli_(keep)
        return x * mask / keep


class ${P}EncoderLayer(nn.Module):
    """A ViT encoder layer built on ``nn.MultiheadAttention``."""

    def __init__(
        self, dim: int, heads: int, mlp_ratio: float = 4.0, drop_path: float = 0.0
    ) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.drop_path = ${P}DropPath(drop_path)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        h, _ = self.attn(h, h, h, need_weights=False)
        x = x + self.drop_path(h)
        return x + self.drop_path(self.mlp(self.norm2(x)))


class ${P}VisionTransformer(nn.Module):
    """Patch embedding, a class token, learned positions and ``${P}EncoderLayer`` s."""

    def __init__(
        self,
        image_size: int = 224,
        dim: int = $width,
        depth: int = $depth,
        heads: int = 12,
        num_classes: int = 1000,
        drop_path_rate: float = 0.1,
    ) -> None:
        super().__init__()
        self.patch_embed = ${P}PatchEmbed(image_size, embed_dim=dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, dim))
        rates = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]
        self.layers = nn.ModuleList(
            ${P}EncoderLayer(dim, heads, drop_path=rate) for rate in rates
        )
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes) if num_classes else nn.Identity()
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.forward_features(images)[:, 0])
'''

_RESNET = '''
class ${P}Bottleneck(nn.Module):
    """ResNet bottleneck: 1x1 reduce, 3x3, 1x1 expand, with a projected shortcut."""

    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes * self.expansion:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + self.shortcut(x))


class ${P}ResNet(nn.Module):
    """A ResNet of ``${P}Bottleneck`` stages."""

    def __init__(self, layers: Sequence[int] = $layers, num_classes: int = 1000) -> None:
        super().__init__()
        self.in_planes = 64
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        )
        stages = []
        for index, blocks in enumerate(layers):
            stages.append(self._stage(64 * 2**index, blocks, stride=1 if index == 0 else 2))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.in_planes, num_classes)

    def _stage(self, planes: int, blocks: int, stride: int) -> nn.Sequential:
        layers = []
        for step in range(blocks):
            layers.append(${P}Bottleneck(self.in_planes, planes, stride if step == 0 else 1))
            self.in_planes = planes * ${P}Bottleneck.expansion
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))
'''

_MOE = '''
class ${P}Expert(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class ${P}SparseMoE(nn.Module):
    """Top-k routing over ``num_experts`` experts, with a load-balancing loss.

    The loop over experts is slow but simple; the grouped-GEMM version lives in
    the kernels package.
    """

    def __init__(self, dim: int, hidden: int, num_experts: int = $experts, top_k: int = 2) -> None:
        super().__init__()
        self.top_k = top_k
        self.num_experts = num_experts
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(${P}Expert(dim, hidden) for _ in range(num_experts))
        self.aux_loss = torch.zeros(())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, steps, dim = x.shape
        flat = x.view(-1, dim)
        router_logits = self.gate(flat)
        weights, chosen = torch.topk(F.softmax(router_logits, dim=-1), self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(flat)
        for index, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == index)
            if rows.numel() == 0:
                continue
            out[rows] += weights[rows, slot, None] * expert(flat[rows])
        self.aux_loss = self._balance_loss(router_logits, chosen)
        return out.view(batch, steps, dim)

    def _balance_loss(self, logits: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
        probs = F.softmax(logits, dim=-1).mean(0)
        counts = torch.bincount(chosen.flatten(), minlength=self.num_experts).float()
        share = counts / counts.sum()
        return self.num_experts * torch.sum(probs * share)
'''

_CROSS = '''
class ${P}CrossAttention(nn.Module):
    """Queries from the text stream, keys and values from the image features."""

    def __init__(self, dim: int, context_dim: int, heads: int = 8, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(context_dim, 2 * dim, bias=False)
        self.to_out = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(dropout))
        self.gate = nn.Parameter(torch.zeros(1))  # start as the identity

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        batch, steps, dim = x.shape
        q = self.to_q(x).view(batch, steps, self.heads, -1).transpose(1, 2)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        k = k.view(batch, -1, self.heads, dim // self.heads).transpose(1, 2)
        v = v.view(batch, -1, self.heads, dim // self.heads).transpose(1, 2)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        out = attn.softmax(dim=-1) @ v
        out = out.transpose(1, 2).reshape(batch, steps, dim)
        return x + torch.tanh(self.gate) * self.to_out(out)


class ${P}Pooler(nn.Module):
    def __init__(self, dim: int, num_labels: int, strategy: str = "$pool") -> None:
        super().__init__()
        self.strategy = strategy
        self.dense = nn.Linear(dim, dim)
        self.classifier = nn.Linear(dim, num_labels)

    def forward(self, hidden: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        if self.strategy == "cls":
            pooled = hidden[:, 0]
        elif mask is None:
            pooled = hidden.mean(dim=1)
        else:
            weights = mask.unsqueeze(-1).type_as(hidden)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        return self.classifier(torch.tanh(self.dense(pooled)))
'''


def extras(rng: random.Random, P: str, count: int) -> list[str]:
    """``count`` of the extra parts (vision, ResNet, experts, ...), for tower ``P``."""
    values = dict(
        P=P,
        p=P.lower(),
        patch=rng.choice([14, 16, 32]),
        width=rng.choice([384, 768, 1024]),
        depth=rng.choice([6, 12, 24]),
        layers=rng.choice(["(3, 4, 6, 3)", "(3, 4, 23, 3)", "(3, 8, 36, 3)"]),
        experts=rng.choice([4, 8, 16]),
        rank=rng.choice([4, 8, 16]),
        temperature=rng.choice([0.7, 0.8, 1.0]),
        chunk=rng.choice([1024, 4096, 8192]),
        pool=rng.choice(["cls", "mean"]),
    )
    templates = [_VISION, _RESNET, _MOE, LORA, SAMPLING, LOSSES, _CROSS, INIT]
    return [fill(t, **values) for t in rng.sample(templates, min(count, len(templates)))]
