"""Write the curta program-id keypair (Solana CLI JSON) for solana-test-validator/deploys.

The keypair is derived, never committed: sha256(LOCALNET_PROGRAM_SEED) is its seed, so its
public key is curta_chain.constants.LOCALNET_PROGRAM_ID.

    python localnet/write_program_keypair.py [PATH]   # default: localnet/program-keypair.json
"""

import sys
from pathlib import Path

from curta_chain.localnet.validator import program_keypair, write_program_keypair


def main() -> int:
    """Write the keypair to the path given (or the default) and print its public key."""
    target = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("program-keypair.json")
    )
    write_program_keypair(target)
    print(f"{target}: {program_keypair().pubkey()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
