"""The pictures' columns: a model halfway through its seal, and where verify's bytes differ."""

from solders.pubkey import Pubkey

from curta_chain.chain.model_status import ModelStatus, SectionStatus, bytes_sealed
from curta_chain.cli.pictures import BAR_COLUMNS, columns_for, section_bar
from curta_chain.program import ModelAccount, ModelState
from curta_chain.program.accounts import SectionSlot

A, B, C = Pubkey.new_unique(), Pubkey.new_unique(), Pubkey.new_unique()


def model(state: ModelState, cursor: tuple[int, int], lengths: list[int]) -> ModelAccount:
    return ModelAccount(
        authority=A,
        declared_hash=bytes(32),
        running_hash=bytes(32),
        state=state,
        section_count=len(lengths),
        bound_count=len(lengths),
        frozen_count=1,
        cursor_section=cursor[0],
        cursor_offset=cursor[1],
        chunks_hashed=0,
        sections=tuple(SectionSlot(key, n) for key, n in zip((B, C), lengths, strict=False)),
        seal_slot=0,
    )


def test_a_seal_halfway_through_its_second_section_draws_sealed_frozen_and_open():
    account = model(ModelState.SEALING, (1, 150_000), [100_000, 300_000])
    assert bytes_sealed(account) == [100_000, 150_000]
    sections = (
        SectionStatus(0, 100_000, B, 1, True, None, 100_000),
        SectionStatus(1, 300_000, C, 1, True, None, 150_000),
    )
    bar, legend = section_bar(ModelStatus(B, A, account, 1, sections, None))
    first, second = bar.removeprefix("Sections:").strip()[1:-1].split("|")
    assert columns_for([100_000, 300_000]) == [15, 46]
    assert first == "#" * 15 and second == "#" * 23 + "=" * 23  # the cursor's section: half
    assert len(bar) <= 80 and len(legend) <= 80


def test_columns_are_shared_by_length_one_each_at_least():
    assert sum(columns_for([68_536, 288_704])) == BAR_COLUMNS - 1
    tiny = columns_for([1, 10**9, 1])
    assert tiny[0] == tiny[2] == 1 and sum(tiny) == BAR_COLUMNS - 2
