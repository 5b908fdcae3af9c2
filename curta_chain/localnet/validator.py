"""``solana-test-validator`` with the curta program, for machines where it is installed.

The embedded localnet is the default; ``curta-chain localnet --validator`` runs the real
validator instead, preloading the same binary at the same id with ``--bpf-program ADDRESS``
(an address, not a keypair: ``LOCALNET_PROGRAM_ID`` is off the curve and has none). Its
genesis hash is its own, so chain commands need ``--program-id LOCALNET_PROGRAM_ID`` there.
"""

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from solders.pubkey import Pubkey

from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.errors import LocalnetError
from curta_chain.program.builds import find_program_binary

VALIDATOR = "solana-test-validator"


def validator_command(
    port: int, ledger: Path, reset: bool, deactivate: Sequence[Pubkey] = ()
) -> list[str]:
    """Return the ``solana-test-validator`` command line that preloads the curta program.

    ``deactivate``: feature ids for its ``--deactivate-feature``.

    Raises:
        LocalnetError: ``solana-test-validator`` is not on PATH, or there is no program.
    """
    executable = shutil.which(VALIDATOR)
    if executable is None:
        raise LocalnetError(
            f"{VALIDATOR} is not installed (not on PATH); "
            "run `curta-chain localnet` without --validator for the embedded localnet"
        )
    binary = find_program_binary()
    if binary is None:
        raise LocalnetError("no curta program binary in this install to preload")
    command = [
        executable,
        "--ledger",
        str(ledger),
        "--rpc-port",
        str(port),
        "--bpf-program",
        LOCALNET_PROGRAM_ID,
        str(binary),
    ]
    for feature in deactivate:
        command += ["--deactivate-feature", str(feature)]
    return [*command, "--reset"] if reset else command


def run_validator(port: int, ledger: Path, reset: bool, deactivate: Sequence[Pubkey] = ()) -> int:
    """Run ``solana-test-validator`` in the foreground; return its exit code.

    Raises:
        LocalnetError: it is not installed or could not be started.
    """
    command = validator_command(port, ledger, reset, deactivate)
    try:
        return subprocess.call(command)
    except OSError as exc:
        raise LocalnetError(f"{command[0]}: cannot start: {exc.strerror}") from exc
