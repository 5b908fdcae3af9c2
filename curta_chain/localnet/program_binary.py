"""Where the curta program binary the localnet preloads comes from."""

from pathlib import Path


def find_program_binary() -> Path | None:
    """Return the packaged ``curta.so``, or None when this install has none."""
    try:
        from curta_chain.program import PROGRAM_BINARY
    except ImportError:
        return None
    path = Path(PROGRAM_BINARY)
    return path if path.is_file() else None
