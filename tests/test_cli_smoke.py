import subprocess
import sys


def test_help_lists_the_program_name():
    out = subprocess.run(
        [sys.executable, "-m", "curta_chain", "--help"], capture_output=True, text=True, check=True
    )
    assert "curta-chain" in out.stdout


def test_a_usage_error_is_one_line_and_exit_2():
    out = subprocess.run(
        [sys.executable, "-m", "curta_chain", "seal", "X", "--commitment", "bogus"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: curta-chain seal: argument --commitment: invalid choice")
    assert len(out.stderr.splitlines()) == 1
