"""What a sandboxed child may have: its limits and the environment variables it is given."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import asdict, dataclass, field
from typing import Any

GiB = 1 << 30

# Variables a test needs to find Python, the GPU and its libraries; nothing else is passed on.
ALLOW = (
    "PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "NO_COLOR",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "PYTHONDONTWRITEBYTECODE",
    "PYTHONWARNINGS", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "LD_LIBRARY_PATH", "CUDA_*", "NVIDIA_*", "NV_*", "CUBLAS_*", "CUDNN_*", "NCCL_*",
    "HIP_*", "ROCM_*", "ROCR_*", "HSA_*", "HCC_*", "AMD_*",
    "PYTORCH_*", "TORCH_*", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "KM_*",
)
# Never passed on, even where a pattern above matches (KM_FOO_TOKEN, CUDA_..._SECRET).
DENY = ("*_API_KEY", "*APIKEY*", "*_TOKEN", "*_TOKEN_*", "*SECRET*", "*PASSWORD*", "*PASSWD*",
        "*CREDENTIAL*", "*_KEY", "AWS_*", "AZURE_*", "GOOGLE_*", "GCP_*", "GITHUB_*", "HF_*",
        "OPENAI_*", "ANTHROPIC_*", "SSH_*", "GPG_*", "DOCKER_*", "KUBE*")

# Files and folders under $HOME that hold credentials: hidden (empty) inside the sandbox.
SECRET_HOME_PATHS = (".ssh", ".aws", ".azure", ".gnupg", ".kube", ".docker", ".config/gcloud",
                     ".config/gh", ".config/openai", ".netrc", ".git-credentials", ".pypirc",
                     ".cache/huggingface", ".huggingface", ".npmrc")


def allowed(name: str) -> bool:
    up = name.upper()
    if any(fnmatch.fnmatchcase(up, p) for p in DENY):
        return False
    return any(fnmatch.fnmatchcase(up, p) for p in ALLOW)


def environment(base: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default os.environ) filtered through the allow-list, then `extra` (filtered too)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if allowed(k)}
    env.update({k: v for k, v in (extra or {}).items() if allowed(k)})
    return env


def _memory_default() -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 16 * GiB
    return max(2 * GiB, min(32 * GiB, total // 2))


@dataclass
class Policy:
    """Limits of one sandboxed child. 0 means: leave this limit as the parent has it."""

    memory_bytes: int = field(default_factory=_memory_default)  # RLIMIT_DATA (heap + private mappings)
    file_bytes: int = 2 * GiB        # RLIMIT_FSIZE: largest file the child may write
    open_files: int = 4096           # RLIMIT_NOFILE
    processes: int = 512             # RLIMIT_NPROC and the pid namespace's pid_max (threads count)
    cpu_seconds: int = 0             # RLIMIT_CPU; 0: derived from the timeout by the caller
    shm_bytes: int = 1 * GiB         # size of the private /dev/shm
    hide: tuple[str, ...] = ()       # extra paths to hide (an empty tmpfs or /dev/null on top)
    visible: tuple[str, ...] = ()    # paths that must stay readable (the dataset): $HOME is hidden
    #                                  whole unless one of these or the Python install lies under it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policy:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for k in ("hide", "visible"):
            if k in known:
                known[k] = tuple(known[k])
        return cls(**known)
