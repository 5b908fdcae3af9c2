"""The per-user record of the local clusters this user started (curta_chain/user_data.py).

A record is what makes a loopback node a local test cluster, so each way it can go wrong is
tried: several localnets recording at once (each under the lock), a corrupt file (nothing is
local, and the next start writes a good one), a folder that cannot be written (the localnet
still serves, says so, and is a real cluster to the client), and the bound on its length.
"""

import asyncio
import json
import stat
import threading
from pathlib import Path

import pytest

from curta_chain.chain.cluster import is_local_cluster
from curta_chain.errors import InputError
from curta_chain.localnet.lifecycle import LocalnetOptions, run_localnet
from curta_chain.reporting import NullReporter
from curta_chain.user_data import (
    MAX_RECORDED,
    data_folder,
    local_cluster_record,
    record_local_cluster,
    recorded_local_clusters,
)


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch) -> Path:
    """This test's own data folder (every process it starts inherits it)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


def test_the_data_folder_is_xdgs_else_under_home(tmp_path: Path):
    assert data_folder({"XDG_DATA_HOME": "/x/data", "HOME": "/h"}) == Path("/x/data/curta-chain")
    assert data_folder({"HOME": "/h"}) == Path("/h/.local/share/curta-chain")
    assert data_folder({"XDG_DATA_HOME": "", "HOME": "/h"}) == Path("/h/.local/share/curta-chain")


def test_a_record_is_the_users_alone_and_holds_the_most_recent(data_home: Path):
    for n in range(MAX_RECORDED + 3):
        record_local_cluster(f"G{n}", "curta-chain localnet", f"http://127.0.0.1:{9000 + n}")
    path = local_cluster_record()
    assert path == data_home / "curta-chain" / "local-clusters.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    recorded = [entry["genesis_hash"] for entry in recorded_local_clusters()]
    assert recorded == [f"G{n}" for n in range(3, MAX_RECORDED + 3)]
    # A start of a recorded chain moves it to the end; it is never listed twice.
    record_local_cluster("G5", "curta-chain localnet --validator", "http://127.0.0.1:1")
    clusters = recorded_local_clusters()
    assert [c["genesis_hash"] for c in clusters].count("G5") == 1
    assert clusters[-1] == {
        "genesis_hash": "G5",
        "started_by": "curta-chain localnet --validator",
        "url": "http://127.0.0.1:1",
    }


def test_localnets_recording_at_once_are_all_recorded(data_home: Path):
    hashes = [f"Together{n}" for n in range(16)]
    threads = [
        threading.Thread(target=record_local_cluster, args=(h, "curta-chain localnet", "u"))
        for h in hashes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(e["genesis_hash"] for e in recorded_local_clusters()) == sorted(hashes)


@pytest.mark.parametrize("text", ["", "{", "[]", '{"clusters": 7}', '{"clusters": [1, {}]}'])
def test_a_corrupt_record_records_nothing_and_the_next_start_rewrites_it(
    data_home: Path, text: str
):
    path = local_cluster_record()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert recorded_local_clusters() == []
    assert not is_local_cluster("http://127.0.0.1:8899", "G")
    record_local_cluster("G", "curta-chain localnet", "http://127.0.0.1:8899")
    assert json.loads(path.read_text())["clusters"][0]["genesis_hash"] == "G"
    assert is_local_cluster("http://127.0.0.1:8899", "G")


def test_only_a_loopback_url_and_a_recorded_genesis_make_a_local_cluster(data_home: Path):
    record_local_cluster("Mine", "curta-chain localnet", "http://127.0.0.1:8899")
    for url in (
        "http://127.0.0.1:8899",
        "http://127.0.0.2:1234",
        "http://localhost:9",
        "http://[::1]:8899",
    ):
        assert is_local_cluster(url, "Mine"), url
    for url in (
        "https://api.devnet.solana.com",
        "http://10.0.0.5:8899",
        "http://localhost.evil:8899",
    ):
        assert not is_local_cluster(url, "Mine"), url
    assert not is_local_cluster("http://127.0.0.1:8899", "Another")


class Lines(NullReporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)


def serve_once(said: Lines) -> str:
    """Start a localnet, check what the client makes of it once it is ready, stop it."""
    stop: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
    seen: list[str] = []

    def on_loop(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        stop.append((loop, event))

    def ready(localnet, url: str, ws_url) -> None:
        seen.append("local" if is_local_cluster(url, localnet.genesis_hash) else "real")
        seen.append(localnet.genesis_hash)
        loop, event = stop[0]
        loop.call_soon(event.set)

    run_localnet(LocalnetOptions(port=0), ready, said, on_loop)
    return seen[0]


def test_the_localnet_says_what_it_recorded_and_where(data_home: Path):
    said = Lines()
    assert serve_once(said) == "local"
    genesis = recorded_local_clusters()[-1]["genesis_hash"]
    assert f"Genesis hash {genesis} (recorded in {local_cluster_record()})" in said.lines


def test_a_localnet_that_cannot_record_still_serves_and_is_a_real_cluster(
    tmp_path: Path, monkeypatch
):
    # The data folder's place is a file: nothing can be recorded there.
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocked))
    with pytest.raises(InputError, match="cannot record a local cluster"):
        record_local_cluster("G", "curta-chain localnet", "u")
    said = Lines()
    assert serve_once(said) == "real"
    (warning,) = [line for line in said.lines if line.startswith("warning: ")]
    assert warning == (
        f"warning: {blocked / 'curta-chain' / 'local-clusters.json'}: cannot record a local "
        "cluster: Not a directory: chain commands will treat this localnet as a real cluster "
        "(--program-id and --yes needed)"
    )
