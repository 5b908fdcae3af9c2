"""The localnet's ledger folder: an append-only log of applied transactions plus snapshots.

Like a validator, the localnet never rewrites accounts on disk per transaction (a 1 KB
write into a 10 MiB account would cost 10 MiB). It appends each transaction that landed
to a log segment, fsyncs the log before telling any client the transaction succeeded
(one fsync covers every record appended meanwhile: group commit), and from time to time
writes a snapshot of every account transactions have touched. Start-up loads the newest
snapshot and replays the log segments written after it through LiteSVM.

Folder layout::

    meta.json              the chain's genesis hash ("genesis_hash", also the seed of its
                           blockhashes) and genesis time, the preloaded program's sha256,
                           the features deactivated at genesis
    lock                   held (flock) while a localnet serves this folder
    log-00000001.bin ...   records: u32 payload length, u32 crc32, u8 kind, u64 slot, payload
    snapshot-00000003.bin  the state after every record of segments 1..3

A record cut short by a kill -9 fails its length or crc32 check; it was never
acknowledged, so start-up truncates it away. Segments are deleted only after a snapshot
that covers them is on disk.
"""

import contextlib
import fcntl
import json
import os
import re
import secrets
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import based58

from curta_chain.errors import LocalnetError
from curta_chain.fsutil import atomic_write

RECORD_TRANSACTION = 1
FORMAT_VERSION = 1
SNAPSHOT_MAGIC = b"CURTALS1"
_RECORD_HEADER = struct.Struct("<IIBQ")
_ACCOUNT_HEADER = struct.Struct("<32sQ32sBQQ")
_STATUS_HEADER = struct.Struct("<64sQI")
_NAME = re.compile(r"(log|snapshot)-[0-9]{8}\.bin")


@dataclass(frozen=True)
class LedgerMeta:
    """What fixes a chain's identity: its genesis, and the program it was started with."""

    genesis_hash: bytes
    genesis_time: float
    program_sha256: str | None
    deactivated_features: tuple[str, ...] | None
    """The features deactivated at genesis; None in a ledger written before there were any."""


@dataclass(frozen=True)
class SnapshotAccount:
    """One account as a snapshot stores it."""

    pubkey: bytes
    lamports: int
    owner: bytes
    executable: bool
    rent_epoch: int
    data: bytes


@dataclass
class Snapshot:
    """The state a snapshot restores: accounts and signature statuses (slot, error JSON)."""

    segment: int
    last_slot: int
    accounts: list[SnapshotAccount]
    statuses: dict[str, tuple[int, str | None]]


class Ledger:
    """An open ledger folder, locked against a second localnet.

    Args:
        folder: the ledger folder; created if missing.
        reset: delete this folder's ledger files first and start a new chain.
        program_sha256: sha256 of the program binary this run preloads (None: none).
        now: the clock a new chain's genesis time is read from.

    Raises:
        LocalnetError: the folder is in use, unreadable, or was written by another
            program binary.
    """

    def __init__(
        self,
        folder: Path,
        reset: bool = False,
        program_sha256: str | None = None,
        now: Callable[[], float] = time.time,
        deactivated_features: tuple[str, ...] = (),
    ):
        self.folder = folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._lock = open(folder / "lock", "a+b")  # noqa: SIM115 -- held until close()
        except OSError as exc:
            raise LocalnetError(f"{folder}: cannot open ledger folder: {exc.strerror}") from exc
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._lock.close()
            raise LocalnetError(f"{folder}: ledger is in use by another localnet") from exc
        try:
            self._prepare(reset)
            self.meta = self._open_meta(program_sha256, now, deactivated_features)
        except BaseException:
            self._lock.close()
            raise
        self.seq = 0
        """The sequence number of the last record appended."""
        self.durable_seq = 0
        """Every record up to this one is on disk: what may be acknowledged."""
        self._pending: list[tuple[int, bytearray]] = []
        self._file: tuple[int, BinaryIO] | None = None
        segments = [self._index(p) for p in self._files("log")]
        snapshots = [self._index(p) for p in self._files("snapshot")]
        self.segment = max(segments + snapshots + [0]) + 1
        self.segment_bytes = 0
        self.failure: LocalnetError | None = None

    def _prepare(self, reset: bool) -> None:
        try:
            # A snapshot cut short by a crash leaves its temporary file behind.
            for path in self.folder.glob(".snapshot-*.tmp"):
                path.unlink(missing_ok=True)
            if reset:
                for path in [*self._files("log"), *self._files("snapshot")]:
                    path.unlink(missing_ok=True)
                (self.folder / "meta.json").unlink(missing_ok=True)
        except OSError as exc:
            raise LocalnetError(f"{self.folder}: cannot clean the ledger: {exc.strerror}") from exc

    def _files(self, prefix: str) -> list[Path]:
        return sorted(
            path for path in self.folder.glob(f"{prefix}-*.bin") if _NAME.fullmatch(path.name)
        )

    @staticmethod
    def _index(path: Path) -> int:
        return int(path.stem.split("-")[1])

    def _path(self, prefix: str, index: int) -> Path:
        return self.folder / f"{prefix}-{index:08d}.bin"

    def _open_meta(
        self,
        program_sha256: str | None,
        now: Callable[[], float],
        deactivated_features: tuple[str, ...],
    ) -> LedgerMeta:
        path = self.folder / "meta.json"
        self.created = not path.exists()
        """Whether this start made the chain (no meta.json before): its genesis is new."""
        if self.created:
            meta = LedgerMeta(secrets.token_bytes(32), now(), program_sha256, deactivated_features)
            body = {
                "format": FORMAT_VERSION,
                "genesis_hash": based58.b58encode(meta.genesis_hash).decode(),
                "genesis_time": meta.genesis_time,
                "program_sha256": program_sha256,
                "deactivated_features": list(deactivated_features),
            }
            atomic_write(path, json.dumps(body, indent=2).encode() + b"\n")
            return meta
        try:
            body = json.loads(path.read_text())
            deactivated = body.get("deactivated_features")
            meta = LedgerMeta(
                based58.b58decode(body["genesis_hash"].encode()),
                float(body["genesis_time"]),
                body["program_sha256"],
                tuple(str(key) for key in deactivated) if deactivated is not None else None,
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LocalnetError(f"{path}: not a localnet ledger meta file ({exc})") from exc
        if body.get("format") != FORMAT_VERSION:
            raise LocalnetError(f"{path}: format {body.get('format')}, expected {FORMAT_VERSION}")
        if meta.program_sha256 != program_sha256:
            raise LocalnetError(
                f"{path}: ledger was written with program sha256 {meta.program_sha256}, this "
                f"localnet preloads {program_sha256}; start with --reset for a new chain"
            )
        return meta

    def snapshot_slot(self) -> int | None:
        """Return the last slot of the newest snapshot on disk, or None if there is none."""
        paths = self._files("snapshot")
        if not paths:
            return None
        try:
            with open(paths[-1], "rb") as handle:
                header = handle.read(len(SNAPSHOT_MAGIC) + 16)
            return struct.unpack_from("<QQ", header, len(SNAPSHOT_MAGIC))[1]
        except (OSError, struct.error):
            return None

    def load_snapshot(self) -> Snapshot | None:
        """Return the newest snapshot, or None if there is none.

        Raises:
            LocalnetError: the snapshot file is damaged.
        """
        paths = self._files("snapshot")
        if not paths:
            return None
        path = paths[-1]
        try:
            return _decode_snapshot(self._index(path), path.read_bytes())
        except (OSError, ValueError, struct.error) as exc:
            raise LocalnetError(f"{path}: damaged snapshot ({exc})") from exc

    def replay(self, after_segment: int) -> Iterator[tuple[int, int, bytes]]:
        """Yield (kind, slot, payload) of every record in segments after ``after_segment``.

        A torn record at the end of the last segment (a write cut by a crash, never
        acknowledged) is truncated away.
        """
        paths = [p for p in self._files("log") if self._index(p) > after_segment]
        for number, path in enumerate(paths):
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise LocalnetError(f"{path}: cannot read the log: {exc.strerror}") from exc
            offset = 0
            while offset < len(data):
                record = _decode_record(data, offset)
                if record is None:
                    if number != len(paths) - 1:
                        raise LocalnetError(f"{path}: damaged record at offset {offset}")
                    with open(path, "r+b") as torn:
                        torn.truncate(offset)
                        os.fsync(torn.fileno())
                    break
                kind, slot, payload, offset = record
                yield kind, slot, payload

    def append(self, kind: int, slot: int, payload: bytes) -> int:
        """Queue a record for the log; return its sequence number (durable once flushed)."""
        header = _RECORD_HEADER.pack(
            len(payload), zlib.crc32(payload, zlib.crc32(bytes([kind]))), kind, slot
        )
        if not self._pending or self._pending[-1][0] != self.segment:
            self._pending.append((self.segment, bytearray()))
        chunk = self._pending[-1][1]
        chunk += header
        chunk += payload
        self.segment_bytes += len(header) + len(payload)
        self.seq += 1
        return self.seq

    def take_pending(self) -> tuple[list[tuple[int, bytearray]], int]:
        """Hand the queued records to a writer; return them and the last sequence number.

        Once ``write`` has put them on disk, ``mark_durable`` with that number.
        """
        pending, self._pending = self._pending, []
        return pending, self.seq

    def mark_durable(self, seq: int) -> None:
        """Record that every record up to ``seq`` is fsynced (called on the loop thread)."""
        self.durable_seq = max(self.durable_seq, seq)

    def flush(self) -> None:
        """Write and fsync every queued record now, on this thread.

        Raises:
            LocalnetError: the disk refused the write.
        """
        pending, upto = self.take_pending()
        self.write(pending)
        self.mark_durable(upto)

    def write(self, pending: list[tuple[int, bytearray]]) -> None:
        """Append ``pending`` to the log segments and fsync them (safe off the loop thread).

        Raises:
            LocalnetError: the disk refused this write or an earlier one.
        """
        if self.failure is not None:
            raise self.failure
        try:
            for segment, chunk in pending:
                handle = self._segment_file(segment)
                handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            # What reached the disk is unknown: the log may not grow past this point.
            self.failure = LocalnetError(f"{self.folder}: cannot append to the log: {exc.strerror}")
            raise self.failure from exc

    def _segment_file(self, segment: int) -> BinaryIO:
        if self._file is not None and self._file[0] == segment:
            return self._file[1]
        if self._file is not None:
            self._file[1].close()
        path = self._path("log", segment)
        created = not path.exists()
        handle = open(path, "ab")  # noqa: SIM115 -- kept open across writes
        if created:
            # The new file's name must survive a crash too.
            dir_fd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        self._file = (segment, handle)
        return handle

    def rotate(self) -> int:
        """Start a new segment for later records; return the segment just closed."""
        closed = self.segment
        self.segment += 1
        self.segment_bytes = 0
        return closed

    def write_snapshot(self, snapshot: Snapshot) -> None:
        """Write ``snapshot`` atomically, then delete what it makes redundant."""
        atomic_write(self._path("snapshot", snapshot.segment), _encode_snapshot(snapshot))
        for path in self._files("log"):
            if self._index(path) <= snapshot.segment:
                path.unlink(missing_ok=True)
        for path in self._files("snapshot"):
            if self._index(path) < snapshot.segment:
                path.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the log and release the folder's lock."""
        if self._file is not None:
            # Every record was flushed by write(); after a failed write this may fail again.
            with contextlib.suppress(OSError):
                self._file[1].close()
            self._file = None
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()


def _decode_record(data: bytes, offset: int) -> tuple[int, int, bytes, int] | None:
    end = offset + _RECORD_HEADER.size
    if end > len(data):
        return None
    length, crc, kind, slot = _RECORD_HEADER.unpack_from(data, offset)
    payload = data[end : end + length]
    if len(payload) != length or zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
        return None
    return kind, slot, payload, end + length


def _encode_snapshot(snapshot: Snapshot) -> Iterator[bytes]:
    yield SNAPSHOT_MAGIC
    yield struct.pack("<QQQ", snapshot.segment, snapshot.last_slot, len(snapshot.accounts))
    for account in snapshot.accounts:
        yield _ACCOUNT_HEADER.pack(
            account.pubkey,
            account.lamports,
            account.owner,
            account.executable,
            account.rent_epoch,
            len(account.data),
        )
        yield account.data
    yield struct.pack("<Q", len(snapshot.statuses))
    for signature, (slot, err) in snapshot.statuses.items():
        err_bytes = err.encode() if err is not None else b""
        yield _STATUS_HEADER.pack(based58.b58decode(signature.encode()), slot, len(err_bytes))
        yield err_bytes


def _decode_snapshot(segment: int, data: bytes) -> Snapshot:
    if data[: len(SNAPSHOT_MAGIC)] != SNAPSHOT_MAGIC:
        raise ValueError("bad magic")
    offset = len(SNAPSHOT_MAGIC)
    stored_segment, last_slot, count = struct.unpack_from("<QQQ", data, offset)
    if stored_segment != segment:
        raise ValueError(f"holds segment {stored_segment}, named {segment}")
    offset += 24
    accounts = []
    for _ in range(count):
        pubkey, lamports, owner, executable, rent_epoch, size = _ACCOUNT_HEADER.unpack_from(
            data, offset
        )
        offset += _ACCOUNT_HEADER.size
        accounts.append(
            SnapshotAccount(
                pubkey, lamports, owner, bool(executable), rent_epoch, data[offset : offset + size]
            )
        )
        offset += size
    (count,) = struct.unpack_from("<Q", data, offset)
    offset += 8
    statuses: dict[str, tuple[int, str | None]] = {}
    for _ in range(count):
        signature, slot, err_len = _STATUS_HEADER.unpack_from(data, offset)
        offset += _STATUS_HEADER.size
        err = data[offset : offset + err_len].decode() if err_len else None
        offset += err_len
        statuses[based58.b58encode(signature).decode()] = (slot, err)
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} trailing bytes")
    return Snapshot(segment, last_slot, accounts, statuses)
