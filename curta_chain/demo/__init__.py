"""The demo model: a llama2.c checkpoint and tokenizer trained here (docs/demo-model.md).

``scripts/train_demo_model.py`` made both files from a seed: ``model.bin`` (llama2.c's
legacy checkpoint format) and ``tokenizer.bin`` (llama2.c's tokenizer format, 512 tokens).
They ship with the package, so ``curta-chain convert`` and llama2.c's ``run.c`` read them
as they are.
"""

from pathlib import Path
from typing import Final

DEMO_DIR: Final = Path(__file__).resolve().parent
DEMO_MODEL: Final = DEMO_DIR / "model.bin"
DEMO_TOKENIZER: Final = DEMO_DIR / "tokenizer.bin"
DEMO_MODEL_SHA256: Final = "9d95d0855ca25572cb0c3d013195b36eb957665a65acb28bba8ec0909c8620db"
DEMO_TOKENIZER_SHA256: Final = "3b930fd84b161699ee7257f7f95f8091c788159fa55222b18a61e6413c69a3b3"

__all__ = [
    "DEMO_DIR",
    "DEMO_MODEL",
    "DEMO_MODEL_SHA256",
    "DEMO_TOKENIZER",
    "DEMO_TOKENIZER_SHA256",
]
