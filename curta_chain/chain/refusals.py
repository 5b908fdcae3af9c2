"""What a node's answer to a send, or a landed failure, says: went, retry, or short of funds.

A transaction the node refuses for funds (a preflight's ``InsufficientFundsForFee``, a
landed failure for rent or lamports) is told apart here, so the sender can end the wait at
once with an ``InsufficientFundsError`` that says so; ``send_checked`` sends one transaction
with the node's preflight and raises what a refusal means.
"""

from typing import Any

from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import TxSpec
from curta_chain.errors import InsufficientFundsError, RpcCallError
from curta_chain.program import preflight_error


def went(answer: object) -> bool:
    """A send's answer says the node has the transaction (a signature, or AlreadyProcessed)."""
    return not isinstance(answer, RpcCallError) or _already_processed(answer)


def _already_processed(error: RpcCallError) -> bool:
    text = f"{error} {error.data}"
    return "AlreadyProcessed" in text or "already been processed" in text


def blockhash_unknown(error: RpcCallError) -> bool:
    """The node refused a send for a blockhash the leader does not know yet."""
    text = f"{error} {error.data}"
    return "BlockhashNotFound" in text or "Blockhash not found" in text


_FUNDS_ERRORS = {
    "InsufficientFundsForFee": "the payer cannot pay the fee",
    "InsufficientFundsForRent": "an account would be left below its rent-exempt minimum",
}
_SYSTEM_RESULT_WITH_NEGATIVE_LAMPORTS = 1
"""The System Program's error for a transfer or creation the source cannot pay."""


def _funds_reason(err: Any) -> str | None:
    """The shortage a TransactionError names, if it names one."""
    key = err if isinstance(err, str) else next(iter(err), None) if isinstance(err, dict) else None
    return _FUNDS_ERRORS.get(key) if isinstance(key, str) else None


def preflight_funds(error: RpcCallError) -> str | None:
    """What a refused preflight says is short of funds, else None."""
    data = error.data if isinstance(error.data, dict) else {}
    if (reason := _funds_reason(data.get("err"))) is not None:
        return reason
    logs = data.get("logs") or ()
    if any("insufficient lamports" in str(line) for line in logs):
        return "insufficient lamports"
    return None


def funds_failure(err: Any, spec: TxSpec) -> str | None:
    """What a landed failure says is short of funds (the System Program's), else None."""
    if (reason := _funds_reason(err)) is not None:
        return reason
    if isinstance(err, dict) and "InstructionError" in err:
        index, inner = err["InstructionError"]
        instructions = spec.instructions
        if (
            isinstance(inner, dict)
            and inner.get("Custom") == _SYSTEM_RESULT_WITH_NEGATIVE_LAMPORTS
            and isinstance(index, int)
            and 0 <= index < len(instructions)
            and instructions[index].program_id == SYSTEM_PROGRAM_ID
        ):
            return "insufficient lamports for a transfer or an account's rent"
    return None


async def send_checked(client: RpcClient, transaction: bytes) -> str:
    """Send signed bytes with preflight; a failing simulation raises the program's error.

    Raises:
        InsufficientFundsError: the payer cannot pay the fee or the rent.
        ProgramError: the program refused the transaction in simulation (named from the IDL).
        RpcCallError: the node refused it for another reason.
    """
    try:
        return await client.send_transaction(transaction, preflight=True)
    except RpcCallError as exc:
        if (short := preflight_funds(exc)) is not None:
            raise InsufficientFundsError(f"the node refused a transaction: {short}") from exc
        translated = preflight_error(exc)
        if translated is None:
            raise
        raise translated from exc
