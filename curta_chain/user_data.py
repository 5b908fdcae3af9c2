"""What curta-chain keeps for this user: its data folder, and the local clusters it started.

The data folder is ``${XDG_DATA_HOME:-~/.local/share}/curta-chain`` (the built
``solana-test-validator`` lives there too: ``validator.install_folder``).

A local test cluster is one this user's ``curta-chain localnet`` or ``curta-chain localnet
--validator`` started: each records its genesis hash in ``local-clusters.json`` here when it
starts (``record_local_cluster``), and a client treats a node as a local test cluster (no
spend prompt, the built-in program id) only when its URL is loopback and its genesis hash is
recorded (``chain.cluster.is_local_cluster``). Every embedded localnet has a genesis hash of
its own, kept by its ledger, so no other process on the machine can claim one: a loopback
node answering a hash that is not recorded here is a real cluster.

The file is this user's alone (0600), holds the ``MAX_RECORDED`` most recent clusters, and is
rewritten whole under a lock, so localnets starting together both stay recorded. A missing
or unreadable record records nothing: every node is then a real cluster. This module sits
below both the localnet (which writes) and the client (which reads); it imports neither.
"""

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from curta_chain.errors import InputError
from curta_chain.fsutil import atomic_write

__all__ = [
    "MAX_RECORDED",
    "RECORD_NAME",
    "data_folder",
    "local_cluster_record",
    "record_local_cluster",
    "recorded_local_clusters",
]

RECORD_NAME = "local-clusters.json"
MAX_RECORDED = 64
"""Clusters kept in the record, the most recently started; an older one is recorded again
when it starts again (a localnet's ledger keeps its genesis hash)."""


def data_folder(environ: Mapping[str, str] = os.environ) -> Path:
    """``${XDG_DATA_HOME:-~/.local/share}/curta-chain``."""
    data = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", "~")) / ".local/share")
    return Path(data).expanduser() / "curta-chain"


def local_cluster_record(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the local clusters this user started are recorded."""
    return data_folder(environ) / RECORD_NAME


def recorded_local_clusters(environ: Mapping[str, str] = os.environ) -> list[dict[str, str]]:
    """The recorded clusters, oldest first: each one's ``genesis_hash``, ``started_by``, ``url``.

    A missing, unreadable or malformed record holds none.
    """
    try:
        body = json.loads(local_cluster_record(environ).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    clusters = body.get("clusters") if isinstance(body, dict) else None
    if not isinstance(clusters, list):
        return []
    return [
        entry
        for entry in clusters
        if isinstance(entry, dict) and isinstance(entry.get("genesis_hash"), str)
    ]


def record_local_cluster(
    genesis_hash: str, started_by: str, url: str, environ: Mapping[str, str] = os.environ
) -> Path:
    """Record that this user started the cluster ``genesis_hash`` (at ``url``); return the file.

    Args:
        genesis_hash: the cluster's genesis hash, as getGenesisHash answers it.
        started_by: the command that started it (``curta-chain localnet``, ...).
        url: where it serves JSON-RPC.
        environ: where ``HOME`` and ``XDG_DATA_HOME`` are read.

    Raises:
        InputError: the record cannot be written.
    """
    path = local_cluster_record(environ)
    entry = {"genesis_hash": genesis_hash, "started_by": started_by, "url": url}
    with _locked(path):
        kept = [e for e in recorded_local_clusters(environ) if e["genesis_hash"] != genesis_hash]
        clusters: list[Any] = [*kept, entry][-MAX_RECORDED:]
        text = json.dumps({"clusters": clusters}, indent=1) + "\n"
        atomic_write(path, text.encode(), mode=0o600)
    return path


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the record's lock (a file beside it) while it is read and rewritten."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115 - held for the block
    except OSError as exc:
        raise InputError(f"{path}: cannot record a local cluster: {exc.strerror}") from exc
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
