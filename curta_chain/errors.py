"""The one exception tree of curta-chain.

Every error a user can cause or meet is a ``CurtaError`` whose message is one line that
names the file, field, offset or account at fault and what was expected. The CLI catches
``CurtaError`` once, prints that line and exits non-zero.

::

    CurtaError
    ├── InputError (ValueError)     something the user handed us is malformed
    │   ├── ArtifactError           a CURTAW01 artifact breaks a rule of the spec
    │   ├── CheckpointError         a llama2.c checkpoint, tokenizer or TEZW file is malformed
    │   ├── KeypairError            a keypair file is not a Solana CLI keypair
    │   ├── ConfigError             a CLI config file, URL, moniker or option is unusable
    │   └── PromptError             a prompt or token sequence the model cannot run
    ├── ChainError                  the chain holds something other than what we need
    │   ├── ProgramError            the program refused an instruction (named from the IDL)
    │   ├── AccountError            an account is missing or is not what it should be
    │   ├── MirrorMismatchError     a mirror (seal's, a run's) disagrees with the chain's account
    │   ├── StepPlanError           the run mirror cannot plan the step asked of it
    │   ├── InsufficientFundsError  the payer cannot pay what the plan costs
    │   ├── ProgramCheckError       the program id does not hold a shipped build (or is unknown)
    │   ├── PriceCapError           a compute-unit price is above the cap; nothing was sent
    │   └── NodeMismatchError       a node's answer breaks the runtime's rules or another node's
    ├── RpcError                    the RPC node answered with an error or not at all
    │   ├── RpcCallError            the node answered a call with a JSON-RPC error object
    │   └── SendGaveUpError         the sender exhausted its retries; the work is resumable
    ├── NotConfirmedError           real money was not confirmed for spending; nothing was sent
    ├── LocalnetError               the embedded localnet cannot start or serve
    └── BuildError                  the program cannot be compiled or linked

Foreign exceptions (OSError, httpx errors, solders parse errors) are mapped to these at
the boundary where they happen, chained with ``from``.
"""

from typing import Any


class CurtaError(Exception):
    """Base of every error curta-chain raises on purpose."""


class InputError(CurtaError, ValueError):
    """Something the user handed us (a file, an argument) is malformed."""


class ArtifactError(InputError):
    """A CURTAW01 artifact breaks a rule of the format spec."""


class CheckpointError(InputError):
    """A llama2.c checkpoint, llama2.c tokenizer or TEZW file is malformed."""


class KeypairError(InputError):
    """A keypair file is missing or is not a Solana CLI keypair."""


class ConfigError(InputError):
    """A CLI config file, RPC URL, moniker or option value is unusable."""


class PromptError(InputError):
    """A prompt, token sequence or generation length the model cannot run."""


class ChainError(CurtaError):
    """The chain holds something other than what the operation needs."""


class ProgramError(ChainError):
    """The curta program refused an instruction.

    Attributes:
        code: the custom error code (6000 and up), or None for a runtime error.
        name: the error's name from the IDL, or the runtime's name for it.
    """

    def __init__(self, message: str, code: int | None = None, name: str | None = None):
        super().__init__(message)
        self.code = code
        self.name = name


class AccountError(ChainError):
    """An account is missing, or is not the model or weight account it should be."""


class MirrorMismatchError(ChainError):
    """A mirror's own computation disagrees with the chain.

    The seal mirror's with the model account (running hash, cursor, chunk count), the run
    mirror's with the run account (the first differing byte, named by its region).
    """


class StepPlanError(ChainError):
    """The run mirror cannot plan the step asked of it; nothing was sent.

    The step would need a weight section the caller does not pass (the program refuses it
    whole: MissingWeightAccount), nothing fits its budget (NothingFits), the run has
    finished, or the step count asked for is behind the mirror's state.
    """


class RpcError(CurtaError):
    """The RPC node answered with an error, or could not be reached."""


class RpcCallError(RpcError):
    """The node answered a call with a JSON-RPC error object.

    Attributes:
        code: the error's code (-32002: a transaction refused by preflight).
        data: the error's ``data``, if any (a preflight failure's TransactionError and logs).
    """

    def __init__(self, method: str, error: dict[str, Any]):
        self.code = error.get("code")
        self.data = error.get("data")
        super().__init__(f"{method}: RPC error {self.code}: {error.get('message', '')}")


class SendGaveUpError(RpcError):
    """The sender gave up after its retries; rerunning the command resumes the work."""


class LocalnetError(CurtaError):
    """The embedded localnet cannot start or serve."""


class BuildError(CurtaError):
    """The on-chain program cannot be compiled or linked."""


class InsufficientFundsError(ChainError):
    """The payer cannot pay what an operation will cost; nothing was sent."""


class ProgramCheckError(ChainError):
    """The program id is unknown here, or does not hold a shipped build (or the named hash)."""


class PriceCapError(ChainError):
    """A compute-unit price (read from the node, or given) is above the cap; nothing was sent."""


class NodeMismatchError(ChainError):
    """A node asked for more than the runtime's rules allow, or disagrees with another node."""


class NotConfirmedError(CurtaError):
    """Spending on a cluster that is not a localnet was not confirmed; nothing was sent."""
