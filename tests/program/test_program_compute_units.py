"""Compute units per instruction, measured in the real runtime (docs/numbers.md's table)."""

import bench_program_cu


def test_compute_units_stay_within_budget():
    rows = dict(bench_program_cu.measure())
    for label, units in rows.items():
        print(f"{label:<48} {units:>8,} CU")
    for label in (
        "sealStep (65,536 bytes, entering a section)",
        "sealStep (65,536 bytes, two accounts)",
    ):
        assert rows[label] < 40_000
        # sha256 alone costs 85 + 16 + 32,768 CU for a 32-byte and a 65,536-byte slice.
        assert rows[label] > 32_869
    assert rows["writeWeights (1,000 bytes)"] < 1_000
    assert all(units < 5_000 for label, units in rows.items() if "sealStep" not in label)
