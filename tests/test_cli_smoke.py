import subprocess
import sys


def test_help_lists_the_program_name():
    out = subprocess.run(
        [sys.executable, "-m", "curta_chain", "--help"], capture_output=True, text=True, check=True
    )
    assert "curta-chain" in out.stdout
