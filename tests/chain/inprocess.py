"""The embedded localnet in this process, answered through its method table: no HTTP.

``LocalnetTransport`` is a ``Transport`` (``curta_chain.chain.rpc``) that hands each
JSON-RPC request to ``curta_chain.localnet.server.answer``, the code that answers over HTTP,
so LiteSVM executes every transaction and the answers have the validator's shapes. Its time
is a ``ManualClock`` that each request moves on by one slot: slots pass as a client works,
every run sees the same slots, and nothing sleeps or reads a wall clock. A status is
confirmed from the request after the one that landed it.

With ``busy`` (``BusyOptions``) it is the busy-cluster mode: blocks, the leader's order,
its limits, loss; ``deactivate_features`` are off at its genesis (``--deactivate-feature``);
``genesis_seed`` gives it another chain's genesis (its derived addresses are then the same).
With ``rps``, it answers as a provider taking that many calls a second would, in time:
a request of n calls moves the clock on by n / ``rps`` seconds (at least its slot).
Faults are injected by subclasses that override ``forward`` (one request in, its answer
out), as ``tests/reliability/fault_proxy.py`` does over HTTP.
"""

from typing import Any

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.chain.context import ChainContext
from curta_chain.chain.plan import PublishPlan
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import Budget
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID
from curta_chain.localnet import BusyOptions, Localnet, ManualClock
from curta_chain.localnet.clock import SLOT_SECONDS
from curta_chain.localnet.server import answer

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
GENESIS_TIME = 1_750_000_000.0


class LocalnetTransport:
    """A localnet answering in-process, one slot per request.

    Attributes:
        localnet: the chain (LiteSVM, the curta program preloaded).
        clock: its time; ``slots(n)`` moves it by hand.
        methods: every method asked, in order.
    """

    url = "inprocess://localnet"

    def __init__(
        self,
        tick: float = SLOT_SECONDS,
        busy: BusyOptions | None = None,
        deactivate_features: tuple[Pubkey, ...] = (),
        rps: float | None = None,
        genesis_seed: bytes | None = None,
    ):
        self.clock = ManualClock(GENESIS_TIME)
        self.localnet = Localnet(
            now=self.clock,
            busy=busy or BusyOptions(),
            deactivate_features=deactivate_features,
            genesis_seed=genesis_seed,
        )
        self.tick = tick
        self.rps = rps
        self.methods: list[str] = []

    async def post(self, payload: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """Answer a request or a batch, as the HTTP server would."""
        calls = len(payload) if isinstance(payload, list) else 1
        self.clock.advance(max(self.tick, calls / self.rps) if self.rps else self.tick)
        if isinstance(payload, list):
            answers = [self.forward(item) for item in payload]
            return [a for a in answers if a is not None]
        return self.forward(payload)

    def forward(self, request: dict[str, Any]) -> Any:
        """One request's answer (None for a notification)."""
        self.methods.append(request.get("method", ""))
        return answer(self.localnet, request)[0]

    async def aclose(self) -> None:
        """Nothing to release: the test's fixture closes the localnet."""

    def slots(self, count: int) -> None:
        """Let ``count`` slots pass."""
        self.clock.advance(count * SLOT_SECONDS)

    def fund(self, sol: float = 100) -> Keypair:
        """A new keypair holding ``sol`` SOL, straight from the faucet."""
        keypair = Keypair()
        self.localnet.airdrop(keypair.pubkey(), int(sol * LAMPORTS_PER_SOL))
        return keypair

    def sender(self, payer: Keypair, **options: Any) -> Sender:
        """A sender that polls without pausing and counts time on this node's clock.

        Its waits move that clock on instead of sleeping.
        """
        options.setdefault("poll_interval", 0.0)
        return Sender(
            RpcClient(self, "confirmed"), payer, clock=self.clock, sleep=self.wait, **options
        )

    async def wait(self, seconds: float) -> None:
        """Let ``seconds`` pass on this node's clock (a sender's sleep)."""
        self.clock.advance(seconds)

    def context(
        self,
        authority: Keypair,
        fee_payer: Keypair | None = None,
        budget: Budget | None = None,
        **options: Any,
    ) -> ChainContext:
        """A chain context on this node, its sender as ``sender`` makes them."""
        sender = self.sender(fee_payer or authority, **options)
        if fee_payer is not None and fee_payer != authority:
            sender.cosigners = (authority,)
        return ChainContext(
            sender.client, PROGRAM_ID, authority, budget=budget or Budget(), sender=sender
        )


async def published(
    node: LocalnetTransport, artifact: Artifact, budget: Budget | None = None
) -> tuple[ChainContext, PublishPlan]:
    """Publish ``artifact`` for a freshly funded authority; return its context and plan."""
    ctx = node.context(node.fund(), budget=budget)
    plan = await plan_publish(ctx, artifact)
    await publish(ctx, artifact, plan)
    return ctx, plan
