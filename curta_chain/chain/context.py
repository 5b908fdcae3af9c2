"""What every chain operation shares: the node, the program, who signs, who pays, and how.

As Anchor's ``Program(idl, provider)`` carries its connection, wallet and options to
every call, a ``ChainContext`` carries the RPC client, the program id, the
model's authority, the fee payer, the compute budget, the reporter and (optionally) a
sender to ``publish``, ``seal``, ``close``, ``run_on_chain`` and ``deploy``.
"""

from dataclasses import dataclass, field, replace

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import Budget, Transactions
from curta_chain.reporting import NullReporter, Reporter


@dataclass(frozen=True)
class ChainContext:
    """The node, the program, the signers and the budget of a chain operation.

    Attributes:
        client: the node.
        program_id: the curta program (for ``deploy``, the program being deployed).
        authority: the model's authority (``-k``); it also pays unless ``fee_payer`` is set.
        fee_payer: pays the fees and the rent of what is created (``--fee-payer``), as
            ``solana program deploy --fee-payer`` does; the authority then cosigns.
        budget: compute-budget instructions and price; whether a separate fee payer signs
            is filled in from the two signers.
        reporter: where lines, notes, progress and waits go.
        sender: lands every transaction (tests and benchmarks pass their own); by default
            each operation makes one that pays with the fee payer and says how to resume it.
    """

    client: RpcClient
    program_id: Pubkey
    authority: Keypair
    fee_payer: Keypair | None = None
    budget: Budget = field(default_factory=Budget)
    reporter: Reporter = field(default_factory=NullReporter)
    sender: Sender | None = None

    def __post_init__(self) -> None:
        sender, fee_payer = self.sender, self.fee_payer
        if sender is not None and fee_payer is not None and sender.payer != fee_payer:
            raise ValueError("the sender's payer is not the context's fee payer")
        separate = self.payer.pubkey() != self.authority.pubkey()
        if self.budget.separate_fee_payer != separate:
            object.__setattr__(self, "budget", replace(self.budget, separate_fee_payer=separate))

    @property
    def payer(self) -> Keypair:
        """Who pays the fees and the rent: the sender's payer, else the fee payer or authority."""
        if self.sender is not None:
            return self.sender.payer
        return self.fee_payer or self.authority

    @property
    def transactions(self) -> Transactions:
        """This program's transactions for this authority, payer and budget."""
        return Transactions(
            self.program_id, self.authority.pubkey(), self.payer.pubkey(), self.budget
        )

    def sender_for(self, resume_hint: str) -> Sender:
        """The sender of an operation whose give-up says ``resume_hint``.

        The context's own sender when it has one; else a new sender paying with ``payer``,
        the authority cosigning when someone else pays.
        """
        if self.sender is not None:
            return self.sender
        payer = self.payer
        cosigners = () if payer.pubkey() == self.authority.pubkey() else (self.authority,)
        return Sender(
            self.client,
            payer,
            resume_hint=resume_hint,
            reporter=self.reporter,
            cosigners=cosigners,
        )
