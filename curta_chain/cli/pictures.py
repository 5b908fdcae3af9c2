"""Pictures in plain text, within 80 columns: sections to scale, and where differences fall.

- ``artifact_bar(lengths)``: an artifact's sections as one bar, each section's share of
  the columns its share of the bytes (``inspect``);
- ``section_bar(status)``: the same bar for a model on chain, each column drawn by how
  far its bytes have come: uploaded, frozen, sealed (``status``);
- ``difference_strips(report, lengths)``: one strip per section, marking the columns
  where the chain's bytes differ from the artifact's (``verify``).

The data behind each picture is in the command's ``--output json``; these only draw it.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curta_chain.chain.model_status import ModelStatus, SectionStatus
    from curta_chain.chain.verify_report import VerifyReport

BAR_COLUMNS = 62
"""Columns of a bar: with its 15-column label and brackets it fits 80 columns."""
LABEL = 15
"""The width of the label before a bar (as status's "Key:" column)."""

SEALED, FROZEN, UPLOADED, OPEN, MISSING = "#", "=", "+", "-", "."
LEGEND = f"{SEALED} sealed  {FROZEN} frozen  {UPLOADED} uploaded  {MISSING} to upload  {OPEN} open"


def columns_for(lengths: Sequence[int], width: int = BAR_COLUMNS) -> list[int]:
    """Split ``width`` columns between sections by their lengths, at least one each.

    Section boundaries take one column each (``|``), so the sections share the rest.
    """
    room = max(width - (len(lengths) - 1), len(lengths))
    total = sum(lengths) or 1
    cols = [max(1, round(room * n / total)) for n in lengths]
    # Rounding may overshoot or fall short: take from or give to the widest section.
    while sum(cols) != room:
        widest = cols.index(max(cols))
        if sum(cols) > room and cols[widest] > 1:
            cols[widest] -= 1
        elif sum(cols) < room:
            cols[widest] += 1
        else:
            break
    return cols


def artifact_bar(lengths: Sequence[int]) -> list[str]:
    """The sections to scale, each drawn with its index's last digit."""
    cols = columns_for(lengths)
    bar = "|".join(str(i % 10) * n for i, n in enumerate(cols))
    return [f"{'to scale':<{LABEL}}[{bar}]"]


def _column_state(section: "SectionStatus", lo: int, hi: int) -> str:
    """How far the bytes ``lo``..``hi`` of a section have come (the bar's one column)."""
    if section.length and hi <= section.bytes_sealed:
        return SEALED
    if section.frozen:
        return FROZEN
    if section.weight_account is None:
        return MISSING
    if section.bytes_matching is None:
        return OPEN
    # Only the count of matching bytes is known: drawn as uploaded from the start.
    return UPLOADED if hi <= section.bytes_matching else MISSING


def section_bar(status: "ModelStatus") -> list[str]:
    """The model's sections to scale, each column by its state, then the legend."""
    lengths = [s.length for s in status.sections]
    pieces = []
    for section, n in zip(status.sections, columns_for(lengths), strict=True):
        step = section.length / n
        pieces.append(
            "".join(
                _column_state(section, round(c * step), round((c + 1) * step)) for c in range(n)
            )
        )
    return [f"{'Sections:':<{LABEL}}[{'|'.join(pieces)}]", f"{'':<{LABEL}}{LEGEND}"]


def difference_strips(report: "VerifyReport", lengths: Sequence[int]) -> list[str]:
    """Per section with differences, a strip marking the columns where bytes differ."""
    lines = []
    for index, bins in enumerate(report.difference_bins):
        if not any(bins):
            continue
        strip = "".join("x" if count else "." for count in bins)
        length = lengths[index] if index < len(lengths) else 0
        lines.append(f"{f'section {index}':<11}[{strip}] {length:,} bytes")
    return lines
