"""What ``verify`` reports: each way the chain differs, and the verdict with what it rests on.

``VerifyReport.to_json`` is ``curta-chain verify --output json``, and the SDK's
``verifyModel`` returns the same fields (``tests/web/test_sdk_chain.py`` holds them equal).
"""

from dataclasses import dataclass

from solders.pubkey import Pubkey

from curta_chain.chain.program_check import DeployedProgram


@dataclass(frozen=True)
class Difference:
    """One way the chain differs from the artifact."""

    kind: str
    detail: str
    section: int | None = None
    offset: int | None = None
    length: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.section is not None:
            where = f" section {self.section}"
            if self.offset is not None:
                where += f" offset {self.offset} length {self.length}"
        return f"{self.kind}{where}: {self.detail}"

    def to_json(self) -> dict[str, object]:
        """The difference as JSON values."""
        return {
            "kind": self.kind,
            "section": self.section,
            "offset": self.offset,
            "length": self.length,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class VerifyReport:
    """Everything verify found."""

    model: Pubkey
    state: str
    declared_hash: bytes
    chain_hash: bytes | None
    artifact_hash: bytes | None
    """The artifact's hash; None when none was given (the chain was checked alone)."""
    differences: tuple[Difference, ...]
    program: DeployedProgram
    slot: int
    """The highest slot the node answered a read at."""
    cross_checked: str | None = None
    """The second node every account was read again from, if any."""
    differing_ranges: int = 0
    """How many byte ranges differ in all (``differences`` lists the first of them)."""
    differing_bytes: int = 0
    difference_bins: tuple[tuple[int, ...], ...] = ()
    """Per section, the differing bytes in each of ``DIFFERENCE_BINS`` equal parts of it."""

    @property
    def artifact_compared(self) -> bool:
        """Whether an artifact was compared (False: the chain was checked alone)."""
        return self.artifact_hash is not None

    @property
    def ok(self) -> bool:
        """True when the chain holds exactly the artifact, sealed.

        Without an artifact: when the chain's bytes hash to the declared hash, sealed.
        """
        return not self.differences and not self.differing_ranges

    @property
    def listed_ranges(self) -> int:
        """How many of the differing byte ranges ``differences`` lists."""
        return sum(1 for d in self.differences if d.kind == "bytes")

    def to_json(self) -> dict[str, object]:
        """The report as JSON values."""
        return {
            "model": str(self.model),
            "ok": self.ok,
            "state": self.state,
            "declared_hash": self.declared_hash.hex(),
            "chain_hash": self.chain_hash.hex() if self.chain_hash else None,
            "artifact_hash": self.artifact_hash.hex() if self.artifact_hash else None,
            "artifact_compared": self.artifact_compared,
            "differences": [d.to_json() for d in self.differences],
            "differing_ranges": self.differing_ranges,
            "differing_ranges_listed": self.listed_ranges,
            "differing_bytes": self.differing_bytes,
            "difference_bins": [list(bins) for bins in self.difference_bins],
            "program": self.program.to_json(),
            "slot": self.slot,
            "cross_checked": self.cross_checked,
        }
