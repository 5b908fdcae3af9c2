"""The transaction pipeline: transactions in flight, sent once, asked about in full batches.

``Sender.send`` takes transactions as specs (instructions and extra signers), signs them
with a recent blockhash (``blockhashes.py``) and keeps up to ``window`` of them in flight.
Sends go out as JSON-RPC batches (``rpc.py`` sizes them to what the provider takes), paced
to the provider: the sends posted and not yet answered hold at most ``LEAD_SECONDS`` of its
rate (until a rate is known, twice as many as the round before), so nothing waits behind
the provider's limit long enough for its blockhash to age, and a batch is posted without
waiting for the one before to be answered (``wire.py``). Every call, send or
poll, counts against that limit, so statuses are polled only for what is due for a look,
256 signatures a call (``flights.py`` says when; ``signature_statuses.py`` reads them).

The sender owns the retries, as Solana's guide to retrying transactions recommends and
agave's ``send_and_confirm_transactions_in_parallel`` does: nodes are asked not to resend,
and a transaction the node has not seen once the cluster's confirmation time passed
(learnt from the statuses seen, ``timing.py``) is sent again, the same bytes: a resend is
the same signature, which the cluster processes once, so it never makes a second
transaction. A sender that had a loss sends its tail's bytes twice, and its resends' too
unless the provider limits its rate (then calls are the time). Only
once its blockhash expired (the block height passed its last valid height, read before the
statuses from the same node) is a transaction signed again with a fresh blockhash.
``BlockhashNotFound`` (a blockhash the leader does not know yet) is no attempt either: the
same bytes go again a slot later, and new transactions take the next blockhash. The sender
gives up only on time without progress: when nothing was confirmed while ``max_expiries``
blockhash lifetimes passed (or the block height stood still; ``Round.stalled``).

A node may deliver every transaction and report no status for any. Given the send's
``Effects`` (``effects.py``), the sender reads on chain what its transactions did before it
signs one again or gives up, and after a few sends of one still unseen: what landed is
counted as landed, and the user is told what the node reported and what the chain shows
(``hidden.py``). What cannot be read so is signed again, at most until the re-signed fees
pass a tenth of the fees of all it signed (the command's plan): then it stops and says so.

A transaction the node refuses for funds (``refusals.py`` tells them apart), or one the
node dropped unseen while the payer holds less than its fee, ends the wait at once with an
``InsufficientFundsError`` that says so. The payer signs every transaction and pays its fee;
``cosigners`` sign those whose instructions need them. What one ``send`` did is the
``SendStats`` it returns (one sender serves any number of sends).
"""

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from solders.keypair import Keypair

from curta_chain.chain.blockhashes import Blockhashes
from curta_chain.chain.effects import Effects
from curta_chain.chain.flights import RESEND_INTERVAL, Flight, Round, Send, SendStats
from curta_chain.chain.hidden import Hidden
from curta_chain.chain.landings import Landings
from curta_chain.chain.refusals import (
    blockhash_unknown,
    preflight_funds,
    went,
)
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.signature_statuses import (
    POLL_INTERVAL,
    Clock,
    default_poll_interval,
)
from curta_chain.chain.signature_statuses import wait_for_signature as wait_for_signature
from curta_chain.chain.specs import TxSpec, sign
from curta_chain.chain.timing import Timing
from curta_chain.chain.wire import Wire
from curta_chain.constants import COMMITMENT_RANK
from curta_chain.errors import (
    ChainError,
    InsufficientFundsError,
    RpcCallError,
    RpcError,
    SendGaveUpError,
)
from curta_chain.program import preflight_error
from curta_chain.protocol.compute_budget import LAMPORTS_PER_SIGNATURE, transaction_fee
from curta_chain.reporting import NullReporter, Progress, Reporter, counted, sol

WINDOW = 2_048
"""Transactions in flight at once: enough to cover a slot or two of confirmation latency at
~2,000 writes/s; also what a crash can make land twice (same bytes, one fee each)."""
BATCH_SIZE = 128
"""sendTransaction calls per group the sender hands the client (which may split it)."""
MAX_EXPIRIES = 3
"""Blockhash lifetimes without a single confirmation before the sender gives up."""
FIRST_BURST = 32
"""Transactions the first round signs while the provider's rate is unknown (doubling)."""
LEAD_SECONDS = 1.5
"""Seconds of the provider's rate the sends on the wire may take (posted, not answered)."""
POLL_SLACK = 1.0
"""Seconds a due look may wait, behind a provider's limit, to share a call with others."""
PAYER_CHECK_EVERY = 10.0
"""Seconds between two reads of the payer's balance while transactions are lost."""


@dataclass
class Sender:
    """Lands a list of transactions through an ``RpcClient`` as fast as the node allows.

    Attributes:
        client: the node.
        payer: signs every transaction and pays its fee.
        resume_hint: what a give-up tells the user to do.
        reporter: where waits are shown.
        cosigners: signers besides the payer, each signing the transactions that name it.
        window: transactions in flight at once.
        batch_size: sendTransaction calls per group (the client splits it further when the
            provider takes smaller batches).
        max_expiries: blockhash lifetimes without a confirmation before giving up.
        poll_interval: seconds between status polls while nothing new lands (None: about a
            slot, or ``LOOPBACK_POLL`` on loopback).
        resend_interval: seconds an unseen transaction waits for its resend until the
            cluster's confirmation time is learnt.
        concurrency: batches on the wire at once (each split further to the provider's size).
        clock: monotonic seconds; ``sleep``: waits that long (tests pass a fake pair).
    """

    client: RpcClient
    payer: Keypair
    resume_hint: str = "rerun the same command to resume"
    reporter: Reporter = field(default_factory=NullReporter)
    cosigners: tuple[Keypair, ...] = ()
    window: int = WINDOW
    batch_size: int = BATCH_SIZE
    max_expiries: int = MAX_EXPIRIES
    poll_interval: float | None = None
    resend_interval: float = RESEND_INTERVAL
    concurrency: int = 4
    clock: Clock = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _lossy: bool = field(default=False, init=False, repr=False)
    """A transaction of this sender's was lost (kept for the command's run): from then on
    its resends and tails go twice."""

    def __post_init__(self) -> None:
        if self.poll_interval is None:
            self.poll_interval = default_poll_interval(self.client.url)
        self._blockhashes = Blockhashes(self.client, self.clock, self.sleep, self.reporter)
        self.timing = Timing(self.resend_interval, self.poll_interval)
        """How long the cluster takes to land a transaction, learnt from what it landed."""
        self.hidden = Hidden(self.client.url, self.reporter)
        """What the node hid and the chain showed, and what re-signing cost (the cap)."""
        self._landings = Landings(self.client, self.timing, self.hidden, self.clock)
        self.own_signatures: set[str] = set()
        """Every signature this sender signed: what the chain may list as its own."""
        self._burst = FIRST_BURST
        self._wire = Wire(self.client)
        self._payer_checked_at = -math.inf

    @property
    def interval(self) -> float:
        """Seconds between two polls while something new may land.

        About a slot, even on loopback, once the node limits our rate: polls must not
        take the calls the sends need.
        """
        assert self.poll_interval is not None
        if self.client.limits.rps is not None:
            return max(self.poll_interval, POLL_INTERVAL)
        return self.poll_interval

    @property
    def slack(self) -> float:
        """Seconds a due look may wait to share a status call: longer behind a rate limit."""
        return max(self.interval, POLL_SLACK) if self.client.limits.rps is not None else 0.0

    async def send(
        self,
        specs: Sequence[TxSpec],
        progress: Progress | None = None,
        commitment: str | None = None,
        what: str | None = None,
        effects: Effects | None = None,
    ) -> SendStats:
        """Land every spec; return when all reach ``commitment`` (default: the client's).

        Without a ``progress`` display, a wait that lasts is shown as waiting for ``what``
        (say, "the model account's creation") to be confirmed. ``effects`` reads what the
        specs did on chain (index-aligned with them): what a node reports no status for is
        looked for there before it is signed again.

        Returns:
            What this call did: its confirmations, signatures, sends, resends and
            re-signings, those found on chain without a status, and the last slot.

        Raises:
            ProgramError: a transaction failed in the program (the error named in the IDL).
            InsufficientFundsError: the node refused a transaction for funds.
            SendGaveUpError: the node stayed unreachable, nothing landed for
                ``max_expiries`` blockhash lifetimes, or re-signing what the node reported
                no status for passed its cap; the message says how to resume.
        """
        started = self.clock()
        self.timing.initial = self.resend_interval
        state = Round(deque(Flight(spec, i) for i, spec in enumerate(specs)), height_since=started)
        level = commitment or self.client.commitment
        send = Send(state, SendStats(), COMMITMENT_RANK[level], progress, effects)
        label = what or counted(len(specs), "transaction")
        # A progress display shows the wait itself (rate, ETA, stalls).
        shown = (
            self.reporter.waiting(f"{label} to be {level}")
            if progress is None
            else contextlib.nullcontext()
        )
        stats = send.stats
        try:
            with shown:
                while state.queue or state.in_flight:
                    await self._blockhashes.refresh(self.interval)
                    sent = await self._send_round(state, stats)
                    polled = state.poll_due(self.clock(), self.slack)
                    if polled:
                        await self._poll_round(send)
                    if progress is not None and (stats.resent or stats.resigned):
                        progress.retries(stats.resent, stats.resigned)
                    if sent or polled or not state.in_flight:
                        continue
                    if self._wire.batches:
                        await self._wire.settle(self._pause(state))
                    else:
                        await self.sleep(self._pause(state))
        except RpcError as exc:
            if isinstance(exc, SendGaveUpError) or not self.client.sends:
                raise  # a give-up says how to resume; with nothing sent there is no resuming
            raise SendGaveUpError(
                f"gave up with {len(specs) - stats.confirmed:,} of "
                f"{counted(len(specs), 'transaction')} not confirmed: {exc}; {self.resume_hint}"
            ) from exc
        finally:
            self._wire.cancel()  # resends of what landed meanwhile: their answers go unread
        stats.seconds = self.clock() - started
        return stats

    async def _poll_round(self, send: Send) -> None:
        """Look at what is due; sign again what expired unseen and the chain does not show.

        Nothing read back on chain (no ``Effects``): each re-signing's fee counts toward the
        cap, since what the node hid may have landed.
        """
        state = send.state
        again = await self._landings.poll(
            send, self.interval, self.max_expiries, self._fund_then(), self.resume_hint
        )
        if again:
            self._lossy = True
            await self._check_payer(again, len(state.queue) + len(state.in_flight) + len(again))
            if send.effects is None:
                self.hidden.resigning(again, self.resume_hint)
            state.queue.extendleft(reversed(again))

    def _pause(self, state: Round) -> float:
        """Seconds until something is to be done: a look, or a resend that needs none."""
        now = self.clock()
        moment = state.next_moment(self.slack)
        return min(max(moment - now, 0.0), max(self.resend_interval, self.interval))

    def _sign(self, flight: Flight, stats: SendStats) -> None:
        blockhashes = self._blockhashes
        assert blockhashes.current is not None
        tx = sign(flight.spec, self.payer, blockhashes.current, self.cosigners)
        wire = bytes(tx)
        limit = flight.spec.size_limit
        if len(wire) > limit:
            raise ChainError(
                f"a {flight.spec.version} transaction is {len(wire)} bytes, over the "
                f"{limit:,}-byte limit"
            )
        if flight.signings:
            stats.resigned += 1
        else:
            self.hidden.planned += transaction_fee(tx.message)
        flight.signings += 1
        flight.signature = str(tx.signatures[0])
        self.own_signatures.add(flight.signature)
        flight.signer_count = len(tx.signatures)
        flight.fee = transaction_fee(tx.message)
        flight.wire = wire
        flight.signed_with = blockhashes.current
        flight.last_valid_height = blockhashes.last_valid
        flight.sent_at = flight.first_sent_at = -math.inf
        flight.sends, flight.resent_at, flight.retry_at, flight.seen = 0, None, None, False

    def _budget(self) -> int:
        """Calls the sends on the wire may hold: ``LEAD_SECONDS`` of the provider's rate.

        Until the rate is known, twice what the round before was let post, from
        ``FIRST_BURST``.
        """
        rps = self.client.limits.rps
        if rps is not None:
            return max(1, int(rps * LEAD_SECONDS))
        return self._burst

    async def _send_round(self, state: Round, stats: SendStats) -> bool:
        """Book the answers that came; resend what is due, then sign and post new ones.

        Up to the window, and to ``LEAD_SECONDS`` of the provider's rate on the wire at
        once. Each batch is posted before the next is signed, so signing overlaps the
        node's work. Returns whether anything was booked or posted.
        """
        booked = await self._book(state, stats)
        now = self.clock()
        tail = state.tail()
        due = [f for f in state.in_flight.values() if state.resend_due(f, tail, self.timing, now)]
        due.sort(key=lambda f: f.sent_at)
        if any(flight.retry_at is None for flight in due):
            # Unseen past its time: lost (a node also drops what the payer cannot pay for).
            self._lossy = True
            await self._check_payer(due, len(state.in_flight) + len(state.queue))
        room = self.window - len(state.in_flight)
        budget = self._budget() - self._wire.calls
        posted = 0
        while (
            budget > 0
            and len(self._wire.batches) < self.concurrency
            and (due or (state.queue and room > 0))
        ):
            resending = bool(due)
            size = min(self.batch_size, budget)
            if due:
                group, due = due[:size], due[size:]
            else:
                group = []
                for _ in range(min(size, room, len(state.queue))):
                    flight = state.queue.popleft()
                    self._sign(flight, stats)
                    state.in_flight[flight.signature] = flight
                    group.append(flight)
                room -= len(group)
            # A lossy sender's resends and its last few go twice: a loss of one copy
            # costs no further resend, and a send waits for its unluckiest transaction.
            # Behind a provider's rate, calls are the time: only the last few do.
            twice = state.tail() or (resending and self.client.limits.rps is None)
            copies = 2 if self._lossy and twice else 1
            budget -= len(group) * copies
            posted += len(group) * copies
            self._wire.post(group, copies)
            await asyncio.sleep(0)  # the request starts before the next group is signed
        if self.client.limits.rps is None and posted >= self._burst:
            self._burst = min(self._burst * 2, self.window)  # all it was let send, it sent
        return booked or bool(posted)

    async def _book(self, state: Round, stats: SendStats) -> bool:
        """Book the answers that came: each flight sent (when to look at it), or why not."""
        batches = self._wire.answered()
        answered = self.clock()
        # The first look: behind a rate limit, once the cluster usually has landed it (a
        # poll is calls); else a poll's interval later, as polls cost nothing.
        limited = self.client.limits.rps is not None
        expected = self.timing.expected if limited else self.interval
        unknown = None
        for batch in batches:
            copies = batch.copies
            for flight, result in batch.answers():
                stats.sent += copies
                stats.resent += copies - 1 + (flight.first_sent_at > -math.inf)
                if flight.sends and flight.resent_at is None:
                    flight.resent_at = answered
                flight.sends += 1
                flight.sent_at, flight.retry_at = answered, None
                flight.check_at = answered + expected
                if flight.first_sent_at == -math.inf:
                    flight.first_sent_at = answered
                if went(result):
                    continue
                assert isinstance(result, RpcCallError)
                if blockhash_unknown(result):
                    # Not yet known to the leader: the same bytes go again in about a slot.
                    flight.retry_at = answered + self.interval
                    flight.sends -= 1
                    unknown = flight.signed_with
                elif (short := preflight_funds(result)) is not None:
                    raise InsufficientFundsError(
                        f"the node refused a transaction: {short}; {self._fund_then()}"
                    ) from result
                elif (refused := preflight_error(result)) is not None:
                    raise refused from result
                else:
                    # A refusal we do not understand: resent on the clock, like a lost one.
                    state.last_refusal = str(result)
        if unknown is not None and unknown == self._blockhashes.current:
            # New transactions wait for the next blockhash rather than meet the same refusal.
            await self._blockhashes.after(unknown, self.interval)
        return bool(batches)

    def _fund_then(self) -> str:
        """What a shortage of funds tells the user to do: fund the payer, then resume."""
        return f"fund the payer, {self.payer.pubkey()}, then {self.resume_hint}"

    async def _check_payer(self, unseen: list[Flight], unconfirmed: int) -> None:
        """A node drops unseen what the payer cannot pay the fee of: say so, at once.

        Read at most every ``PAYER_CHECK_EVERY`` seconds: each read is a call.
        """
        now = self.clock()
        if now - self._payer_checked_at < PAYER_CHECK_EVERY:
            return
        self._payer_checked_at = now
        fee = LAMPORTS_PER_SIGNATURE * max(flight.signer_count for flight in unseen)
        balance = await self.client.balance(self.payer.pubkey())
        if balance < fee:
            raise InsufficientFundsError(
                f"payer {self.payer.pubkey()} has {sol(balance)}, less than a transaction's "
                f"fee ({sol(fee)}): the node drops what it cannot charge; {unconfirmed} "
                f"transactions not confirmed; fund it, then {self.resume_hint}"
            )
