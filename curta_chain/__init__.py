"""curta-chain: put a CURTAW01 model artifact on Solana and prove it from the chain alone."""

__version__ = "0.1.0"

__all__ = ["__version__"]
