"""The transaction pipeline: many transactions in flight, batched sends and status polls.

``Sender.send`` takes transactions as specs (instructions and extra signers), signs them
with a recent blockhash and keeps up to ``window`` of them in flight. Sends go out as
JSON-RPC batches (``rpc.py`` sizes them to what the provider takes); statuses are polled
256 signatures a call (``signature_statuses.py``, the one status poller, which
``wait_for_signature`` also uses).

The sender owns the retries, as Solana's guide to retrying transactions recommends and
agave's ``send_and_confirm_transactions_in_parallel`` does: nodes are asked not to resend,
and each transaction the node has not seen yet is sent again, the same bytes, on the
schedule ``flights.py`` keeps: a resend is the same signature, which the cluster processes
once, so it never makes a second transaction. A sender that had a loss (a resend came due)
sends each resend's and its tail's bytes twice, two chances against one loss. Only once its
blockhash expired (the block height passed its last valid height, read before the statuses
from the same node, so a status read after it that is still unseen can never appear) is a
transaction signed again with a fresh blockhash. ``BlockhashNotFound`` (a blockhash the
leader does not know yet) is no attempt either: the same bytes go again a slot later, and
new transactions take the next blockhash. The sender gives up only on time without
progress: when nothing was confirmed while ``max_expiries`` blockhash lifetimes passed (or
the block height stood still for ``STALLED_HEIGHT`` seconds; ``Round.stalled``). A
sender's first blockhash is newer than any an earlier run could have signed with, so no
transaction of ours is mistaken for a replay of an earlier run's. Only the caller's specs
decide what is sent; the sender never invents work.

A transaction the node refuses for funds (``refusals.py`` tells them apart), or one the
node dropped unseen while the payer holds less than its fee, ends the wait at once with an
``InsufficientFundsError`` that says so.

The payer signs every transaction and pays its fee; ``cosigners`` (the model's authority,
when ``--fee-payer`` names someone else) sign those whose instructions need them. What the
sender waits for goes to the reporter; what one ``send`` did is the ``SendStats`` it
returns (a sender keeps no running totals, so one sender serves any number of sends).
"""

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from solders.hash import Hash
from solders.keypair import Keypair

from curta_chain.chain.flights import RESEND_INTERVAL, Flight, Round, SendStats
from curta_chain.chain.refusals import blockhash_unknown, funds_failure, preflight_funds, went
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.signature_statuses import (
    POLL_INTERVAL,
    Clock,
    StatusPoller,
    default_poll_interval,
)
from curta_chain.chain.signature_statuses import wait_for_signature as wait_for_signature
from curta_chain.chain.specs import TxSpec, sign
from curta_chain.constants import COMMITMENT_RANK
from curta_chain.errors import (
    ChainError,
    InsufficientFundsError,
    RpcCallError,
    RpcError,
    SendGaveUpError,
)
from curta_chain.program import preflight_error, transaction_error
from curta_chain.protocol.compute_budget import LAMPORTS_PER_SIGNATURE
from curta_chain.reporting import NullReporter, Progress, Reporter, counted, sol

FRESH_BLOCKHASH_WAIT = 60.0
"""Seconds a new sender waits for the node's next blockhash (one slot, normally)."""
BLOCKHASH_MAX_AGE = 10.0
"""Seconds a blockhash is used for new transactions (it stays valid for ~60 s)."""
WINDOW = 2_048
"""Transactions in flight at once: enough to cover a slot or two of confirmation latency at
~2,000 writes/s; also what a crash can make land twice (same bytes, one fee each)."""
BATCH_SIZE = 128
"""sendTransaction calls per group the sender hands the client (which may split it)."""
MAX_EXPIRIES = 3
"""Blockhash lifetimes without a single confirmation before the sender gives up."""


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
        resend_interval: seconds between two sends of the same unseen bytes.
        concurrency: batch requests on the wire at once.
        clock: monotonic seconds (how old a blockhash is, how long a wait lasts).
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
    _blockhash: Hash | None = field(default=None, init=False, repr=False)
    _last_valid: int = field(default=0, init=False, repr=False)
    _fetched_at: float = field(default=0.0, init=False, repr=False)
    _lossy: bool = field(default=False, init=False, repr=False)
    """A transaction of this sender's was lost (kept for the command's run): from then on
    one a later send outran goes again ``OVERDUE`` after its send without waiting for two
    quiet slots, and tails go twice."""

    def __post_init__(self) -> None:
        if self.poll_interval is None:
            self.poll_interval = default_poll_interval(self.client.url)

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
    def poller(self) -> StatusPoller:
        """The status poller this sender's rounds use."""
        return StatusPoller(self.client, self.interval, self.clock)

    async def send(
        self,
        specs: Sequence[TxSpec],
        progress: Progress | None = None,
        commitment: str | None = None,
        what: str | None = None,
    ) -> SendStats:
        """Land every spec; return when all reach ``commitment`` (default: the client's).

        Without a ``progress`` display, a wait that lasts is shown as waiting for ``what``
        (say, "the model account's creation") to be confirmed.

        Returns:
            What this call did: its confirmations, signatures, sends, resends and
            re-signings, and the last slot one landed in.

        Raises:
            ProgramError: a transaction failed in the program (the error named in the IDL).
            InsufficientFundsError: the node refused a transaction for funds.
            SendGaveUpError: the node stayed unreachable, or nothing landed for
                ``max_expiries`` blockhash lifetimes; the message says how to resume.
        """
        started = self.clock()
        stats = SendStats()
        level = commitment or self.client.commitment
        wanted = COMMITMENT_RANK[level]
        state = Round(deque(Flight(spec) for spec in specs), height_since=started)
        poller = self.poller
        label = what or f"{len(specs):,} transaction{'s' if len(specs) != 1 else ''}"
        # A progress display shows the wait itself (rate, ETA, stalls).
        shown = (
            self.reporter.waiting(f"{label} to be {level}")
            if progress is None
            else contextlib.nullcontext()
        )
        try:
            with shown:
                while state.queue or state.in_flight:
                    await self._refresh_blockhash()
                    await self._send_round(state, stats)
                    done = await self._poll_round(state, progress, wanted, poller, stats, specs)
                    if progress is not None and (stats.resent or stats.resigned):
                        progress.retries(stats.resent, stats.resigned)
                    if done:
                        state.idle = 0
                    elif state.in_flight:
                        state.idle += 1
                        await asyncio.sleep(
                            state.pause(
                                self.interval, self.resend_interval, self.clock, self._lossy
                            )
                        )
        except RpcError as exc:
            if isinstance(exc, SendGaveUpError) or not self.client.sends:
                raise  # a give-up says how to resume; with nothing sent there is no resuming
            unconfirmed = len(specs) - stats.confirmed
            raise SendGaveUpError(
                f"gave up with {unconfirmed:,} of {counted(len(specs), 'transaction')} not "
                f"confirmed: {exc}; {self.resume_hint}"
            ) from exc
        stats.seconds = self.clock() - started
        return stats

    def _sign(self, flight: Flight, stats: SendStats) -> None:
        assert self._blockhash is not None
        tx = sign(flight.spec, self.payer, self._blockhash, self.cosigners)
        wire = bytes(tx)
        limit = flight.spec.size_limit
        if len(wire) > limit:
            raise ChainError(
                f"a {flight.spec.version} transaction is {len(wire)} bytes, over the "
                f"{limit:,}-byte limit"
            )
        if flight.signings:
            stats.resigned += 1
        flight.signings += 1
        flight.signature = str(tx.signatures[0])
        flight.signer_count = len(tx.signatures)
        flight.wire = wire
        flight.signed_with = self._blockhash
        flight.last_valid_height = self._last_valid
        flight.sent_at, flight.seen, flight.retry_at = -math.inf, False, None

    async def _refresh_blockhash(self, force: bool = False) -> None:
        if self._blockhash is None:
            await self._first_blockhash()
        elif force or self.clock() - self._fetched_at > BLOCKHASH_MAX_AGE:
            self._blockhash, self._last_valid = await self.client.latest_blockhash()
            self._fetched_at = self.clock()

    async def _first_blockhash(self) -> None:
        """Take a blockhash newer than the one current when this sender starts.

        A transaction is its signature: the same instructions signed under the same
        blockhash are one transaction, which the node processes once. An earlier run (a seal
        before a reopen, a publish before the chain's bytes were changed) may have signed
        these very instructions under the blockhash current now, and the node would take
        ours for a replay of it. The next blockhash rules that out, for one slot's wait.
        """
        current, _ = await self.client.latest_blockhash()
        self._blockhash, self._last_valid = await self._next_blockhash(current)

    async def _next_blockhash(self, current: Hash) -> tuple[Hash, int]:
        """Wait for the node's blockhash to be another than ``current``; return it."""
        deadline = self.clock() + FRESH_BLOCKHASH_WAIT
        with self.reporter.waiting("the node's next block (a fresh blockhash)"):
            while True:
                blockhash, last_valid = await self.client.latest_blockhash()
                if blockhash != current:
                    self._fetched_at = self.clock()
                    return blockhash, last_valid
                if self.clock() > deadline:
                    raise RpcError(
                        f"{self.client.url}: the blockhash did not change in "
                        f"{FRESH_BLOCKHASH_WAIT:.0f} s: is the node producing blocks?"
                    )
                await asyncio.sleep(self.interval)

    async def _send_round(self, state: Round, stats: SendStats) -> None:
        """Resend what is due, then sign and send new ones up to the window.

        Signing the next group overlaps the node's work on the previous one: each request
        starts before the next group is signed.
        """
        now = self.clock()
        tail = state.tail()
        due = [
            flight
            for flight in state.in_flight.values()
            if not flight.seen
            and now >= state.resend_at(flight, tail, self.clock, self.resend_interval, self._lossy)
            and state.height <= flight.last_valid_height
        ]
        if any(flight.retry_at is None for flight in due):
            # Unseen past its time: lost (a node also drops what the payer cannot pay for).
            await self._check_payer(due, len(state.in_flight) + len(state.queue))
            self._lossy = True
        semaphore = asyncio.Semaphore(self.concurrency)

        async def send_group(group: list[Flight], copies: int) -> list[object]:
            calls = [self.client.send_call(f.wire) for f in group for _ in range(copies)]
            self.client.sends += len(calls)
            try:
                answers = await self.client.batch(calls)
            finally:
                semaphore.release()
            # Of a flight's copies, the answer that says it went (else the first refusal).
            return [
                next((a for a in pair if went(a)), pair[0])
                for pair in zip(*(answers[i::copies] for i in range(copies)), strict=True)
            ]

        sending: list[tuple[list[Flight], int, asyncio.Task[list[object]]]] = []
        room = self.window - len(state.in_flight)
        signed = 0
        try:
            while due or (state.queue and room > 0):
                resending = bool(due)
                if due:
                    group, due = due[: self.batch_size], due[self.batch_size :]
                else:
                    group = []
                    for _ in range(min(self.batch_size, room, len(state.queue))):
                        flight = state.queue.popleft()
                        self._sign(flight, stats)
                        group.append(flight)
                    room -= len(group)
                    signed += len(group)
                # A lossy sender's resends and its last few go twice: a loss of one copy
                # costs no further resend, and a send waits for its unluckiest transaction.
                copies = 2 if self._lossy and (resending or state.tail(signed)) else 1
                await semaphore.acquire()
                sending.append((group, copies, asyncio.create_task(send_group(group, copies))))
                await asyncio.sleep(0)
            answers = await asyncio.gather(*(task for *_, task in sending))
        finally:
            for *_, task in sending:
                task.cancel()
        answered = self.clock()
        unknown: Hash | None = None
        for (group, copies, _), results in zip(sending, answers, strict=True):
            for flight, result in zip(group, results, strict=True):
                stats.sent += copies
                stats.resent += copies - 1 + (flight.sent_at > -math.inf)
                state.in_flight[flight.signature] = flight
                flight.sent_at, flight.retry_at = answered, None
                if went(result):
                    continue
                assert isinstance(result, RpcCallError)
                if blockhash_unknown(result):
                    # Not yet known to the leader: the same bytes go again in about a slot.
                    flight.retry_at = answered + self.interval
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
        if unknown is not None and unknown == self._blockhash:
            # New transactions wait for the next blockhash rather than meet the same refusal.
            self._blockhash, self._last_valid = await self._next_blockhash(unknown)

    async def _poll_round(
        self,
        state: Round,
        progress: Progress | None,
        wanted: int,
        poller: StatusPoller,
        stats: SendStats,
        specs: Sequence[TxSpec],
    ) -> int:
        in_flight = state.in_flight
        if not in_flight:
            return 0
        signatures = list(in_flight)
        statuses, height = await poller.read(signatures)
        now = self.clock()
        if height != state.height:
            state.height, state.height_since = height, now
        if state.progress_height is None:
            state.progress_height = height
        # Unseen in the cache past its blockhash's last height: one search of the ledger's
        # history before it is called lost (it may have landed and left the cache since).
        gone = [
            i
            for i, (signature, status) in enumerate(zip(signatures, statuses, strict=True))
            if status is None and height > in_flight[signature].last_valid_height
        ]
        if gone:
            found = await poller.search([signatures[i] for i in gone])
            for i, status in zip(gone, found, strict=True):
                statuses[i] = status
        done = 0
        expired: list[Flight] = []
        for signature, status in zip(signatures, statuses, strict=True):
            flight = in_flight[signature]
            if status is None:
                if height > flight.last_valid_height:
                    del in_flight[signature]  # expired unseen: it can never land now
                    expired.append(flight)
                continue
            if status.err is not None:
                raise self._failure(flight, status.err)
            if not flight.seen:
                flight.seen = True
                state.seen_sent_at = max(state.seen_sent_at, flight.sent_at)
                state.seen_at = now
            if COMMITMENT_RANK.get(status.confirmation or "processed", 0) >= wanted:
                del in_flight[signature]
                done += 1
                stats.confirmed += 1
                stats.signatures.append(signature)
                stats.last_slot = max(stats.last_slot, status.slot)
                self.client.landed(status.slot)
                if progress is not None:
                    progress.advance(flight.spec.payload_bytes, 1)
        if expired:
            self._lossy = True
            await self._check_payer(expired, len(specs) - stats.confirmed)
            state.queue.extendleft(reversed(expired))
        if done:
            state.progress_height = height
        if (why := state.stalled(self.max_expiries, now)) is not None:
            raise SendGaveUpError(
                f"gave up with {len(specs) - stats.confirmed:,} of "
                f"{counted(len(specs), 'transaction')} not confirmed: {why}; {self.resume_hint}"
            )
        return done

    def _failure(self, flight: Flight, err: Any) -> ChainError:
        """The error a landed failure stands for: a shortage of funds, or the program's."""
        short = funds_failure(err, flight.spec)
        if short is not None:
            return InsufficientFundsError(f"a transaction failed: {short}; {self._fund_then()}")
        return transaction_error(err)

    def _fund_then(self) -> str:
        """What a shortage of funds tells the user to do: fund the payer, then resume."""
        return f"fund the payer, {self.payer.pubkey()}, then {self.resume_hint}"

    async def _check_payer(self, unseen: list[Flight], unconfirmed: int) -> None:
        """A node drops unseen what the payer cannot pay the fee of: say so, at once."""
        fee = LAMPORTS_PER_SIGNATURE * max(flight.signer_count for flight in unseen)
        balance = await self.client.balance(self.payer.pubkey())
        if balance < fee:
            raise InsufficientFundsError(
                f"payer {self.payer.pubkey()} has {sol(balance)}, less than a transaction's "
                f"fee ({sol(fee)}): the node drops what it cannot charge; {unconfirmed} "
                f"transactions not confirmed; fund it, then {self.resume_hint}"
            )
