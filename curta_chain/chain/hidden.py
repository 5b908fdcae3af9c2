"""A node that reports no status for what landed: what the chain shows, what it costs, and words.

The sender calls on ``Hidden`` when transactions stay unseen: sent again and again, expired,
or all of a send's for blockhash lifetimes. Given the send's ``Effects``, ``on_chain`` reads
what they did on chain; what landed is counted as landed (never signed again), and the
user is told once what the node reported and what the chain shows. What nothing can read
back is signed again, each re-signing's fee added up (``resigning``): if it had landed, that
fee is paid twice, so once those fees pass ``CAP_SHARE`` of the plan's fees (and the first
``CAP_FLOOR`` re-signings, for a plan of a few transactions) the send stops and says so,
rather than pay on for a node that may be hiding what landed.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from curta_chain.chain.effects import Effects
from curta_chain.chain.flights import Flight, Round
from curta_chain.errors import SendGaveUpError
from curta_chain.reporting import NullReporter, Reporter, counted, sol

CAP_SHARE = 0.1
"""The share of the plan's fees re-signing what could not be read back may spend."""
CAP_FLOOR = 4
"""Re-signings always allowed, whatever the plan's fees (a plan of a few transactions)."""
CHECK_WITH = (
    "check its answers against a second node's (`curta-chain verify MODEL --cross-check URL` "
    "reads every account again from one) or use another node with -u"
)
"""What the user is told to do about a node that hides statuses."""


@dataclass
class Hidden:
    """What one sender's node hid: landings the chain showed, re-signings' fees, the cap."""

    url: str
    reporter: Reporter = field(default_factory=NullReporter)
    planned: int = 0
    """The fees of every transaction this sender signed, once each (the plan, by default)."""
    found: int = 0
    """Transactions the node reported no status for that the chain showed landed."""
    resigned_fees: int = 0
    """Fees of the re-signings of transactions nothing could read back."""
    resigned: int = 0

    async def on_chain(
        self, flights: Sequence[Flight], state: Round, effects: Effects | None
    ) -> list[Flight]:
        """Of ``flights`` (unseen), those whose effect the chain shows: they landed.

        The first time some are found, says what the node reported and what the chain shows.
        """
        if effects is None or not flights:
            return []
        shown = await effects.landed([f.index for f in flights], state.seen + state.found)
        landed = [flight for flight, there in zip(flights, shown, strict=True) if there]
        if landed and not self.found:
            self.reporter.note(
                f"{self.url} reported no status for {counted(len(landed), 'transaction')} "
                f"that the chain shows landed: counted from the chain. A node that hides what "
                f"landed cannot be trusted for what it reports: {CHECK_WITH}"
            )
        self.found += len(landed)
        state.found += len(landed)
        return landed

    def resigning(self, flights: Sequence[Flight], resume_hint: str) -> None:
        """Count the fees of signing ``flights`` again; stop once they pass the cap.

        Raises:
            SendGaveUpError: re-signing them would take the re-signings' fees past
                ``CAP_SHARE`` of the plan's fees (every transaction the sender signed, once
                each) and their count past ``CAP_FLOOR``.
        """
        plan = self.planned
        fees = self.resigned_fees + sum(f.fee for f in flights)
        count = self.resigned + len(flights)
        if fees > CAP_SHARE * plan and count > CAP_FLOOR:
            raise SendGaveUpError(
                f"stopped: {self.url} reported no status for "
                f"{counted(count, 'transaction')} whose blockhash "
                f"expired, and their effect cannot be read on chain; signing them again would "
                f"bring what re-signing costs to {sol(fees)}, over {CAP_SHARE:.0%} of the "
                f"plan's fees ({sol(plan)}), paid twice for each that landed after all: "
                f"{CHECK_WITH}; then {resume_hint}"
            )
        self.resigned_fees = fees
        self.resigned += len(flights)

    def said(self, state: Round, sent: int, effects: Effects | None) -> str:
        """What a give-up adds: the node reported no status, and what the chain shows."""
        if state.seen or not sent:
            return ""
        chain = (
            "and the chain shows none of them landed either"
            if effects is not None
            else "and their effect cannot be read on chain"
        )
        return f"; {self.url} reported no status for any of the {sent:,} sent, {chain}"
