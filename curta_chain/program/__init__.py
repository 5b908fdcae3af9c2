"""The curta program's client: the shipped binary, its IDL, instruction builders, account codecs.

Everything here is pure (no network): publish, seal and verify build on it.
"""

from curta_chain.program.accounts import (
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    SectionSlot,
    WeightHeader,
)
from curta_chain.program.builds import ShippedProgram, shipped_programs
from curta_chain.program.errors import custom_error_code, error_name, program_error
from curta_chain.program.idl import IDL_PATH, PROGRAM_BINARY, load_idl
from curta_chain.program.instructions import (
    MAX_WRITE_PAYLOAD,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_run,
    close_weight_account,
    create_model,
    max_write_payload,
    open_run,
    reopen,
    seal_step,
    step,
    write_weights,
)
from curta_chain.program.run_account import (
    RUN_HEADER_SIZE,
    FinishReason,
    PromptKind,
    Region,
    RunAccount,
    RunState,
    run_account_size,
    run_layout,
)

__all__ = [
    "IDL_PATH",
    "MAX_WRITE_PAYLOAD",
    "MODEL_ACCOUNT_SIZE",
    "PROGRAM_BINARY",
    "RUN_HEADER_SIZE",
    "FinishReason",
    "ModelAccount",
    "ModelState",
    "PromptKind",
    "Region",
    "RunAccount",
    "RunState",
    "SectionSlot",
    "ShippedProgram",
    "WeightHeader",
    "begin_sealing",
    "bind_weight_account",
    "close_model",
    "close_run",
    "close_weight_account",
    "create_model",
    "custom_error_code",
    "error_name",
    "load_idl",
    "max_write_payload",
    "open_run",
    "program_error",
    "reopen",
    "run_account_size",
    "run_layout",
    "seal_step",
    "shipped_programs",
    "step",
    "write_weights",
]
