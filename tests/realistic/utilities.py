"""Ordinary helper code training repositories carry: meters, schedules, data, I/O.

Each entry of ``HELPERS`` is one top-level chunk with names of its own, used at most
once per file; ``helpers(rng, count)`` picks a seeded selection with seeded numbers.
"""

from __future__ import annotations

import random

from tests.realistic.source import fill

_METER = '''
class AverageMeter:
    """Running average of a scalar (loss, accuracy, tokens per second)."""

    def __init__(self, name: str, fmt: str = ":.4f") -> None:
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self) -> None:
        self.val = 0.0
        self.avg = 0.0
        self.sum = 0.0
        self.count = 0

    def update(self, val: float, n: int = 1) -> None:
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / max(self.count, 1)

    def __str__(self) -> str:
        text = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return text.format(**self.__dict__)
'''

_TIMER = '''
class Throughput:
    """Tokens and samples per second over a sliding window of $window steps."""

    def __init__(self, window: int = $window) -> None:
        self.times: deque = deque(maxlen=window)
        self.tokens: deque = deque(maxlen=window)
        self._start = time.perf_counter()

    def step(self, tokens: int) -> None:
        now = time.perf_counter()
        self.times.append(now - self._start)
        self.tokens.append(tokens)
        self._start = now

    @property
    def tokens_per_second(self) -> float:
        elapsed = sum(self.times)
        return sum(self.tokens) / elapsed if elapsed else 0.0


@contextmanager
def timed(label: str, sink: Optional[Dict[str, float]] = None) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        if sink is not None:
            sink[label] = sink.get(label, 0.0) + elapsed
'''

_LOGGING = '''
def setup_logging(output_dir: Optional[str] = None, rank: int = 0, level: int = logging.INFO):
    """Log to stderr on rank 0 (and to a file per rank when ``output_dir`` is set)."""
    handlers: List[logging.Handler] = []
    if rank == 0:
        handlers.append(logging.StreamHandler(sys.stdout))
    if output_dir is not None:
        os.makedirs(output_dir, exist_ok=True)
        handlers.append(logging.FileHandler(os.path.join(output_dir, f"log_rank{rank}.txt")))
    logging.basicConfig(
        level=level if rank == 0 else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        handlers=handlers,
        force=True,
    )
'''

_SEED = '''
def set_seed(seed: int, deterministic: bool = False) -> None:
    """Seed Python, NumPy and torch; optionally ask cuDNN for determinism."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    if deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
'''

_SCHEDULE = '''
def cosine_with_warmup(
    step: int, warmup_steps: int = $warmup, max_steps: int = $max_steps, min_ratio: float = 0.1
) -> float:
    """Learning-rate multiplier: linear warm-up, then cosine decay to ``min_ratio``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step >= max_steps:
        return min_ratio
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)
    return min_ratio + 0.5 * (1.0 - min_ratio) * (1.0 + math.cos(math.pi * progress))


def build_scheduler(optimizer: torch.optim.Optimizer, warmup_steps: int, max_steps: int):
    return LambdaLR(
        optimizer, lambda step: cosine_with_warmup(step, warmup_steps, max_steps)
    )
'''

_DIST = '''
def get_rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def get_world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main_process() -> bool:
    return get_rank() == 0


def all_reduce_mean(value: torch.Tensor) -> torch.Tensor:
    """Average a tensor over ranks (a no-op without a process group)."""
    if get_world_size() == 1:
        return value
    value = value.clone()
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value / get_world_size()


def print_rank0(*args: Any, **kwargs: Any) -> None:
    if is_main_process():
        print(*args, **kwargs, flush=True)
'''

DATASET = '''
class TokenDataset(Dataset):
    """Fixed-length windows over a flat array of token ids stored with ``np.memmap``."""

    def __init__(self, path: str, block_size: int = $block, dtype: str = "uint16") -> None:
        self.path = path
        self.block_size = block_size
        self.data = np.memmap(path, dtype=np.dtype(dtype), mode="r")
        if len(self.data) <= block_size:
            raise ValueError(f"{path} holds {len(self.data)} tokens, fewer than one block")

    def __len__(self) -> int:
        return (len(self.data) - 1) // self.block_size

    def __getitem__(self, index: int) -> Dict[str, torch.Tensor]:
        start = index * self.block_size
        chunk = torch.from_numpy(self.data[start : start + self.block_size + 1].astype(np.int64))
        return {"input_ids": chunk[:-1], "labels": chunk[1:]}


class SyntheticDataset(Dataset):
    """Random tokens, for smoke tests and throughput runs without data."""

    def __init__(self, size: int = 10_000, block_size: int = $block, vocab_size: int = 32000):
        self.size = size
        self.block_size = block_size
        self.vocab_size = vocab_size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Dict[str, torch.Tensor]:
        generator = torch.Generator().manual_seed(index)
        ids = torch.randint(0, self.vocab_size, (self.block_size + 1,), generator=generator)
        return {"input_ids": ids[:-1], "labels": ids[1:]}
'''

_COLLATE = '''
def pad_collate(
    batch: Sequence[Dict[str, torch.Tensor]], pad_id: int = 0, label_pad_id: int = -100
) -> Dict[str, torch.Tensor]:
    """Right-pad variable-length examples to the longest in the batch."""
    longest = max(item["input_ids"].size(0) for item in batch)
    input_ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), longest), label_pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(batch), longest), dtype=torch.long)
    for row, item in enumerate(batch):
        length = item["input_ids"].size(0)
        input_ids[row, :length] = item["input_ids"]
        labels[row, :length] = item.get("labels", item["input_ids"])
        attention_mask[row, :length] = 1
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention_mask}
'''

_JSONL = '''
def read_jsonl(path: Union[str, Path], limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """Read a JSON-lines file, skipping blank lines."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            records.append(json.loads(line))
            if limit is not None and len(records) >= limit:
                break
    return records


def write_jsonl(records: Iterable[Dict[str, Any]], path: Union[str, Path]) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\\n")
            count += 1
    return count
'''

_METRICS = '''
def perplexity(loss: float) -> float:
    # exp overflows past ~709; a loss that high means the run diverged anyway
    return math.exp(min(loss, 20.0))


def accuracy(logits: torch.Tensor, targets: torch.Tensor, topk: Tuple[int, ...] = (1,)):
    """Top-k accuracy, in percent, for each k."""
    with torch.no_grad():
        maxk = max(topk)
        _, pred = logits.topk(maxk, 1, True, True)
        correct = pred.t().eq(targets.view(1, -1).expand_as(pred.t()))
        return [correct[:k].reshape(-1).float().sum(0) * 100.0 / targets.size(0) for k in topk]


def gradient_norm(parameters: Iterable[torch.nn.Parameter], norm_type: float = 2.0) -> float:
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norms = torch.stack([torch.linalg.vector_norm(g, norm_type) for g in grads])
    return float(torch.linalg.vector_norm(norms, norm_type))
'''

_CONFIG_IO = '''
def load_config(path: Union[str, Path], overrides: Sequence[str] = ()) -> Dict[str, Any]:
    """Read a JSON config and apply ``key=value`` overrides (values parsed as JSON)."""
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    for override in overrides:
        key, _, raw = override.partition("=")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw  # a bare string
        node = config
        *parents, leaf = key.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return config


def save_config(config: Mapping[str, Any], output_dir: Union[str, Path]) -> Path:
    target = Path(output_dir) / "config.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(dict(config), indent=2, sort_keys=True))
    return target
'''

_MEMORY = '''
def memory_summary(device: Optional[torch.device] = None) -> str:
    """Allocated and peak CUDA memory in GiB ("n/a" without CUDA)."""
    if not torch.cuda.is_available():
        return "n/a"
    gib = 1024**3
    allocated = torch.cuda.memory_allocated(device) / gib
    peak = torch.cuda.max_memory_allocated(device) / gib
    reserved = torch.cuda.memory_reserved(device) / gib
    return f"allocated {allocated:.2f} GiB, peak {peak:.2f} GiB, reserved {reserved:.2f} GiB"


def free_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
'''

_EARLY = '''
class EarlyStopper:
    """Stop when the monitored value has not improved for ``patience`` evaluations."""

    def __init__(self, patience: int = $patience, min_delta: float = 0.0, mode: str = "min"):
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
        self.patience = patience
        self.min_delta = min_delta
        self.mode = mode
        self.best: Optional[float] = None
        self.bad_rounds = 0

    def __call__(self, value: float) -> bool:
        improved = (
            self.best is None
            or (self.mode == "min" and value < self.best - self.min_delta)
            or (self.mode == "max" and value > self.best + self.min_delta)
        )
        if improved:
            self.best = value
            self.bad_rounds = 0
        else:
            self.bad_rounds += 1
        return self.bad_rounds >= self.patience
'''

_HF_CONFIG = """
# Settings of the Hugging Face Trainer runs: accelerate reads these keys, not torch.
HF_FSDP_CONFIG = {
    "fsdp": "full_shard auto_wrap",
    "fsdp_config": {
        "min_num_params": 0,
        "transformer_layer_cls_to_wrap": ["DecoderLayer"],
        "backward_prefetch": "backward_pre",
        "forward_prefetch": False,
    },
}
"""

HELPERS = [
    _METER, _TIMER, _LOGGING, _SEED, _SCHEDULE, _DIST, DATASET,
    _COLLATE, _JSONL, _METRICS, _CONFIG_IO, _MEMORY, _EARLY, _HF_CONFIG,
]  # fmt: skip


def _values(rng: random.Random) -> dict:
    return dict(
        window=rng.choice([20, 50, 100]),
        warmup=rng.choice([500, 1000, 2000]),
        max_steps=rng.choice([100_000, 250_000, 600_000]),
        block=rng.choice([512, 1024, 2048]),
        patience=rng.choice([3, 5, 10]),
    )


def dataset(rng: random.Random) -> str:
    """The token datasets (``TokenDataset``, ``SyntheticDataset``)."""
    return fill(DATASET, **_values(rng))


def helpers(rng: random.Random, count: int, exclude: tuple[str, ...] = ()) -> list[str]:
    """``count`` helper chunks, none defining a name in ``exclude``."""
    values = _values(rng)
    pool = [t for t in HELPERS if not any(f"def {n}(" in t or f"class {n}" in t for n in exclude)]
    return [fill(t, **values) for t in rng.sample(pool, min(count, len(pool)))]
