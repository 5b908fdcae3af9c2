"""The curta program's client: the shipped builds, the IDL, instruction builders, account codecs.

Everything here is pure (no network): publish, seal and verify build on it.
"""

from curta_chain.program.accounts import (
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    SectionSlot,
    WeightHeader,
)
from curta_chain.program.builds import (
    BUILDS,
    PROGRAM_BINARY,
    ProgramBuild,
    ShippedProgram,
    shipped_program,
    shipped_program_for,
    shipped_programs,
)
from curta_chain.program.errors import (
    error_name,
    preflight_error,
    program_error,
    transaction_error,
)
from curta_chain.program.idl import IDL_PATH, load_idl
from curta_chain.program.instructions import (
    begin_sealing,
    bind_weight_account,
    close_model,
    close_run,
    close_weight_account,
    create_model,
    open_run,
    reopen,
    seal_step,
    step,
    write_weights,
)
from curta_chain.program.write_payload import MAX_WRITE_PAYLOAD, max_write_payload

__all__ = [
    "BUILDS",
    "IDL_PATH",
    "MAX_WRITE_PAYLOAD",
    "MODEL_ACCOUNT_SIZE",
    "PROGRAM_BINARY",
    "ModelAccount",
    "ModelState",
    "ProgramBuild",
    "SectionSlot",
    "ShippedProgram",
    "WeightHeader",
    "begin_sealing",
    "bind_weight_account",
    "close_model",
    "close_run",
    "close_weight_account",
    "create_model",
    "error_name",
    "load_idl",
    "max_write_payload",
    "open_run",
    "preflight_error",
    "program_error",
    "reopen",
    "seal_step",
    "shipped_program",
    "shipped_program_for",
    "shipped_programs",
    "step",
    "transaction_error",
    "write_weights",
]
