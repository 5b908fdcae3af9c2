import pytest

from curta_chain.errors import InputError
from curta_chain.fsutil import atomic_write, refresh_generated


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    atomic_write(target, [b"new ", b"bytes"])
    assert target.read_bytes() == b"new bytes"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def chunks():
        yield b"partial"
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError):
        atomic_write(target, chunks())
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_an_unwritable_folder_is_one_line_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        atomic_write(tmp_path / "missing" / "out.bin", b"x")


def test_a_secret_is_never_readable_by_others_not_even_while_it_is_written(tmp_path):
    target = tmp_path / "id.json"
    seen: list[int] = []

    def chunks():
        (temporary,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        seen.append(temporary.stat().st_mode & 0o777)
        yield b"[1, 2, 3]"

    atomic_write(target, chunks(), mode=0o600)
    assert seen == [0o600]
    assert target.stat().st_mode & 0o777 == 0o600


def test_a_generated_file_is_compared_named_when_stale_and_rewritten(tmp_path, capsys):
    path = tmp_path / "made.h"
    assert not refresh_generated(path, "new\n", True, "stale: run gen.py")
    assert not path.exists()  # a check writes nothing
    assert capsys.readouterr().err == f"{path}: stale: run gen.py\n"
    assert not refresh_generated(path, "new\n", False, "stale: run gen.py")
    assert path.read_text() == "new\n" and capsys.readouterr().out == f"wrote {path}\n"
    assert refresh_generated(path, "new\n", True, "stale: run gen.py")
    assert refresh_generated(path, "new\n", False, "stale: run gen.py")
    assert capsys.readouterr() == ("", "")
