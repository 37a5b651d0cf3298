"""Where the generated code's names come from: the import table, preludes, comments.

Each name maps to the statements that may bind it; a file picks one (so one file says
``from torch import nn`` and the next ``import torch.nn as nn``). Names whose meaning
depends on the file (``wrap``: torch's or FairScale's) are pinned by the file's composer.
"""

from __future__ import annotations

_STDLIB = """
import argparse
import contextlib
import copy
import functools
import gc
import glob
import importlib.util
import inspect
import itertools
import json
import logging
import math
import os
import pickle
import random
import re
import shutil
import socket
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections import OrderedDict
from collections import defaultdict
from collections import deque
from contextlib import contextmanager
from contextlib import nullcontext
from copy import deepcopy
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from datetime import datetime
from datetime import timedelta
from enum import Enum
from functools import lru_cache
from functools import partial
from functools import wraps
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import Iterator
from typing import List
from typing import Mapping
from typing import Optional
from typing import Sequence
from typing import Set
from typing import Tuple
from typing import Type
from typing import Union
from unittest import mock
import pytest
"""

_TORCH = """
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import Tensor
from torch.cuda.amp import GradScaler
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim import AdamW
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import IterableDataset
from torch.utils.data import TensorDataset
from torch.utils.data.distributed import DistributedSampler
from torch.distributed.fsdp import FullyShardedDataParallel
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType
from torch.distributed.fsdp import FullStateDictConfig
from torch.distributed.fsdp import ShardedStateDictConfig
from torch.distributed.fsdp import LocalStateDictConfig
from torch.distributed.fsdp import MixedPrecision
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import BackwardPrefetch
from torch.distributed.fsdp.wrap import default_auto_wrap_policy
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy
from torch.distributed.fsdp.wrap import _or_policy
from torch.distributed.fsdp.wrap import _FSDPPolicy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.distributed.fsdp.wrap import enable_wrap
from torch.distributed.fsdp.wrap import wrap
import torch.distributed.fsdp.wrap as fsdp_wrap
from torch.distributed._composable.fsdp import fully_shard
from torch.distributed._composable.fsdp import MixedPrecisionPolicy
from packaging import version
import lightning as L
from pytorch_lightning.utilities.imports import _FAIRSCALE_AVAILABLE
from packaging.version import Version
"""

_CHECKPOINT_WRAPPER = "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"

# Names with more than one usual spelling; a file picks one.
_ALTERNATIVES = {
    "nn": ["from torch import nn", "import torch.nn as nn"],
    "F": ["import torch.nn.functional as F", "from torch.nn import functional as F"],
    "DistributedSampler": [
        "from torch.utils.data.distributed import DistributedSampler",
        "from torch.utils.data import DistributedSampler",
    ],
    "GradScaler": ["from torch.cuda.amp import GradScaler"],
}

# Lightning's names, by package: a Lightning file pins one family.
LIGHTNING_1X = {
    "pl": "import pytorch_lightning as pl",
    "LightningModule": "from pytorch_lightning import LightningModule",
    "LightningDataModule": "from pytorch_lightning import LightningDataModule",
    "Trainer": "from pytorch_lightning import Trainer",
    "seed_everything": "from pytorch_lightning import seed_everything",
    "Callback": "from pytorch_lightning.callbacks import Callback",
    "ModelCheckpoint": "from pytorch_lightning.callbacks import ModelCheckpoint",
    "LearningRateMonitor": "from pytorch_lightning.callbacks import LearningRateMonitor",
    "EarlyStopping": "from pytorch_lightning.callbacks import EarlyStopping",
    "TensorBoardLogger": "from pytorch_lightning.loggers import TensorBoardLogger",
    "CSVLogger": "from pytorch_lightning.loggers import CSVLogger",
    "DDPStrategy": "from pytorch_lightning.strategies import DDPStrategy",
    "DDPFullyShardedNativeStrategy": (
        "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy"
    ),
    "DDPFullyShardedStrategy": "from pytorch_lightning.strategies import DDPFullyShardedStrategy",
    "StrategyRegistry": "from pytorch_lightning.strategies import StrategyRegistry",
    "rank_zero_info": "from pytorch_lightning.utilities import rank_zero_info",
    "rank_zero_only": "from pytorch_lightning.utilities import rank_zero_only",
    "MisconfigurationException": (
        "from pytorch_lightning.utilities.exceptions import MisconfigurationException"
    ),
    "BoringModel": "from tests_pytorch.helpers.boring_model import BoringModel",
    "RandomDataset": "from tests_pytorch.helpers.boring_model import RandomDataset",
    "RunIf": "from tests_pytorch.helpers.runif import RunIf",
    "_TORCH_GREATER_EQUAL_1_12": (
        "from pytorch_lightning.utilities.imports import _TORCH_GREATER_EQUAL_1_12"
    ),
    "_TORCH_GREATER_EQUAL_2_0": (
        "from pytorch_lightning.utilities.imports import _TORCH_GREATER_EQUAL_2_0"
    ),
}

LIGHTNING_2X = {
    name: line.replace("pytorch_lightning", "lightning.pytorch")
    for name, line in LIGHTNING_1X.items()
}
LIGHTNING_2X["_TORCH_GREATER_EQUAL_2_0"] = (
    "from lightning.fabric.utilities.imports import _TORCH_GREATER_EQUAL_2_0"
)
LIGHTNING_2X["_TORCH_GREATER_EQUAL_1_12"] = (
    "from lightning.fabric.utilities.imports import _TORCH_GREATER_EQUAL_1_12"
)
LIGHTNING_2X["FSDPStrategy"] = "from lightning.pytorch.strategies import FSDPStrategy"

PRELUDES = {
    "logger": "logger = logging.getLogger(__name__)",
    "log": "log = logging.getLogger(__name__)",
    "LOCAL_RANK": 'LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))',
    "WORLD_SIZE": 'WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))',
    "RANK": 'RANK = int(os.environ.get("RANK", 0))',
    "_TORCH_GREATER_EQUAL_2_0": (
        "TORCH_VERSION = version.parse(version.parse(torch.__version__).base_version)\n"
        '_TORCH_GREATER_EQUAL_2_0 = TORCH_VERSION >= version.parse("2.0.0")'
    ),
    "_TORCH_GREATER_EQUAL_1_12": (
        '_TORCH_GREATER_EQUAL_1_12 = version.parse(torch.__version__) >= version.parse("1.12.0")'
    ),
}

COMMENTS = {
    "default_auto_wrap_policy": ["# torch 1.12", "# size based wrapping", "# noqa: F401"],
    "transformer_auto_wrap_policy": ["# wrap each transformer block", "# torch >= 1.12"],
    "lambda_auto_wrap_policy": ["# for the embedding and head", "# torch >= 1.12"],
    "_or_policy": ["# private, but the only way to combine policies"],
    "enable_wrap": ["# context for wrap()"],
    "wrap": ["# manual wrapping of big layers"],
    "FullyShardedDataParallel": ["# sharded data parallel", "# torch >= 1.11"],
    "MixedPrecision": ["# bf16 params, fp32 reduce"],
    "CPUOffload": ["# for the 13B run"],
    "ShardingStrategy": ["# FULL_SHARD by default"],
    "StateDictType": ["# for checkpointing"],
    "DDPFullyShardedNativeStrategy": ["# torch FSDP", "# native FSDP (PL >= 1.7)"],
    "DDPFullyShardedStrategy": ["# FairScale FSDP", "# needs fairscale installed"],
    "checkpoint_wrapper": ["# activation checkpointing", "# saves memory"],
    "CheckpointImpl": ["# reentrant or not"],
    "auto_wrap": ["# recursive wrapping"],
}


def _parse_table(text: str) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for line in text.strip().splitlines():
        words = line.split()
        name = words[-1] if "as" in words or words[0] == "from" else words[1].split(".")[0]
        table.setdefault(name, []).append(line)
    return table


def import_table() -> dict[str, list[str]]:
    """Every name the templates may read without binding, with its import statements."""
    table = _parse_table(_STDLIB)
    table.update(_parse_table(_TORCH))
    table.update(_ALTERNATIVES)
    for name in ("CheckpointImpl", "checkpoint_wrapper", "apply_activation_checkpointing"):
        table[name] = [f"from {_CHECKPOINT_WRAPPER} import {name}"]
    return table
