"""The transaction pipeline: many transactions in flight, batched sends and status polls.

``Sender.send`` takes transactions as specs (instructions and extra signers), signs them
with a recent blockhash and keeps up to ``window`` of them in flight. Sends go out as
JSON-RPC batches; statuses are polled 256 signatures a call. A transaction that the node
has not seen once its blockhash expired is signed again with a fresh blockhash: after
expiry the old one can never land, so nothing is applied twice. Each transaction is tried
at most ``max_attempts`` times; then the sender gives up with an error that says how to
resume. A sender's first blockhash is newer than any an earlier run could have signed
with, so no transaction of ours is mistaken for a replay of an earlier run's. Only the
caller's specs decide what is sent; the sender never invents work.

The payer signs every transaction and pays its fee; ``cosigners`` (the model's authority,
when ``--fee-payer`` names someone else) sign those whose instructions need them. What the
sender waits for goes to the reporter; what one ``send`` landed is the ``SendStats`` it
returns (a sender keeps no running totals, so one sender serves any number of sends).

Statuses are read in one place, ``StatusPoller``: the sender's rounds and
``wait_for_signature`` (a transaction the node sent itself, an airdrop) both use it.
"""

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from solders.hash import Hash
from solders.keypair import Keypair

from curta_chain.chain.rpc import RpcClient, SignatureStatus
from curta_chain.chain.specs import TxSpec, sign
from curta_chain.constants import COMMITMENT_RANK, MAX_TRANSACTION_SIZE
from curta_chain.errors import ChainError, RpcCallError, RpcError, SendGaveUpError
from curta_chain.program import preflight_error, transaction_error
from curta_chain.reporting import NullReporter, Progress, Reporter

CONFIRM_TIMEOUT = 60.0
"""Seconds ``wait_for_signature`` waits for a transaction someone else sent."""
FRESH_BLOCKHASH_WAIT = 60.0
"""Seconds a new sender waits for the node's next blockhash (one slot, normally)."""
BLOCKHASH_MAX_AGE = 10.0
"""Seconds a blockhash is used for new transactions (it stays valid for ~60 s)."""
WINDOW = 2_048
"""Transactions in flight at once: enough to cover a slot or two of confirmation latency at
~2,000 writes/s; also what a crash can make land twice (same bytes, one fee each)."""
BATCH_SIZE = 128
"""sendTransaction calls per JSON-RPC batch request."""
POLL_INTERVAL = 0.05
"""Seconds between two status polls while nothing new reached the commitment."""

Clock = Callable[[], float]


@dataclass
class SendStats:
    """What one ``send`` did (each call returns its own)."""

    confirmed: int = 0
    signatures: list[str] = field(default_factory=list)
    """Every confirmed transaction's signature, in the order they were confirmed."""
    sent: int = 0
    """sendTransaction calls answered (a re-signed transaction counts each time)."""
    resigned: int = 0
    seconds: float = 0.0

    @property
    def last_signature(self) -> str:
        """The last confirmed transaction's signature ("" when none was)."""
        return self.signatures[-1] if self.signatures else ""


@dataclass
class StatusPoller:
    """Reads signature statuses and says which reached a commitment: the one status poller.

    A status with an error raises it, translated through the program's IDL.
    """

    client: RpcClient
    interval: float = POLL_INTERVAL
    clock: Clock = time.monotonic

    async def poll(self, signatures: Sequence[str], wanted: int) -> tuple[list[bool | None], int]:
        """One round: for each signature, None (unseen), False (seen, not yet), True (there).

        Also returns the block height, which tells an unseen transaction's blockhash expired.

        Raises:
            ChainError: a transaction failed (a ``ProgramError`` when the program refused it).
        """
        statuses, height = await asyncio.gather(
            self.client.signature_statuses(signatures), self.client.block_height()
        )
        return [_reached(status, wanted) for status in statuses], height

    async def wait(self, signature: str, commitment: str, timeout: float) -> None:
        """Return once ``signature`` reached ``commitment``.

        Raises:
            ChainError: the transaction failed.
            RpcError: it did not reach ``commitment`` within ``timeout`` seconds.
        """
        wanted = COMMITMENT_RANK[commitment]
        deadline = self.clock() + timeout
        while True:
            (status,) = await self.client.signature_statuses([signature])
            if _reached(status, wanted):
                return
            if self.clock() >= deadline:
                raise RpcError(f"{signature} was not {commitment} within {timeout:.0f} s")
            await asyncio.sleep(self.interval)


def _reached(status: SignatureStatus | None, wanted: int) -> bool | None:
    if status is None:
        return None
    if status.err is not None:
        raise transaction_error(status.err)
    return COMMITMENT_RANK.get(status.confirmation or "processed", 0) >= wanted


async def wait_for_signature(
    client: RpcClient, signature: str, timeout: float = CONFIRM_TIMEOUT
) -> None:
    """Wait until a transaction (one the node sent itself, an airdrop) reaches our commitment.

    Raises:
        ChainError: the transaction failed.
        RpcError: it was not confirmed within ``timeout`` seconds.
    """
    await StatusPoller(client).wait(signature, client.commitment, timeout)


async def send_checked(client: RpcClient, transaction: bytes) -> str:
    """Send signed bytes with preflight; a failing simulation raises the program's error.

    Raises:
        ProgramError: the program refused the transaction in simulation (named from the IDL).
        RpcCallError: the node refused it for another reason.
    """
    try:
        return await client.send_transaction(transaction, preflight=True)
    except RpcCallError as exc:
        translated = preflight_error(exc)
        if translated is None:
            raise
        raise translated from exc


@dataclass
class _Flight:
    spec: TxSpec
    attempts: int
    signature: str = ""
    wire: bytes = b""
    last_valid_height: int = 0


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
        batch_size: sendTransaction calls per JSON-RPC batch.
        max_attempts: signings of one transaction before the sender gives up.
        poll_interval: seconds between status polls.
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
    max_attempts: int = 5
    poll_interval: float = POLL_INTERVAL
    concurrency: int = 4
    clock: Clock = time.monotonic
    _blockhash: Hash | None = field(default=None, init=False, repr=False)
    _last_valid: int = field(default=0, init=False, repr=False)
    _fetched_at: float = field(default=0.0, init=False, repr=False)

    @property
    def poller(self) -> StatusPoller:
        """The status poller this sender's rounds use."""
        return StatusPoller(self.client, self.poll_interval, self.clock)

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
            What this call did: its confirmations, signatures, sends and re-signings.

        Raises:
            ProgramError: a transaction failed in the program (the error named in the IDL).
            SendGaveUpError: the node stayed unreachable, or a transaction did not land after
                ``max_attempts`` signings; the message says how to resume.
        """
        started = self.clock()
        stats = SendStats()
        level = commitment or self.client.commitment
        wanted = COMMITMENT_RANK[level]
        queue: deque[_Flight] = deque(_Flight(spec, 0) for spec in specs)
        in_flight: dict[str, _Flight] = {}
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
                while queue or in_flight:
                    await self._refresh_blockhash()
                    await self._send_round(queue, in_flight, stats)
                    done = await self._poll_round(queue, in_flight, progress, wanted, poller, stats)
                    if not done and in_flight:
                        await asyncio.sleep(self.poll_interval)
        except RpcError as exc:
            if isinstance(exc, SendGaveUpError) or not self.client.sends:
                raise  # a give-up says how to resume; with nothing sent there is no resuming
            # Counted from the confirmations: a group being sent is in neither queue nor map.
            unconfirmed = len(specs) - stats.confirmed
            raise SendGaveUpError(
                f"gave up with {unconfirmed} of {len(specs)} transactions not "
                f"confirmed: {exc}; {self.resume_hint}"
            ) from exc
        stats.seconds = self.clock() - started
        return stats

    def _prepare(self, flight: _Flight, stats: SendStats) -> _Flight:
        if flight.attempts >= self.max_attempts:
            raise SendGaveUpError(
                f"a transaction did not land after {self.max_attempts} signings; {self.resume_hint}"
            )
        assert self._blockhash is not None
        tx = sign(flight.spec, self.payer, self._blockhash, self.cosigners)
        wire = bytes(tx)
        if len(wire) > MAX_TRANSACTION_SIZE:
            raise ChainError(
                f"a transaction is {len(wire)} bytes, over the {MAX_TRANSACTION_SIZE}-byte limit"
            )
        if flight.attempts:
            stats.resigned += 1
        flight.attempts += 1
        flight.signature = str(tx.signatures[0])
        flight.wire = wire
        flight.last_valid_height = self._last_valid
        return flight

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
        deadline = self.clock() + FRESH_BLOCKHASH_WAIT
        with self.reporter.waiting("the node's next block (a fresh blockhash)"):
            while True:
                blockhash, last_valid = await self.client.latest_blockhash()
                if blockhash != current:
                    break
                if self.clock() > deadline:
                    raise RpcError(
                        f"{self.client.url}: the blockhash did not change in "
                        f"{FRESH_BLOCKHASH_WAIT:.0f} s: is the node producing blocks?"
                    )
                await asyncio.sleep(self.poll_interval)
        self._blockhash, self._last_valid = blockhash, last_valid
        self._fetched_at = self.clock()

    async def _send_round(
        self, queue: deque[_Flight], in_flight: dict[str, _Flight], stats: SendStats
    ) -> None:
        """Sign and send up to the window, one batch request per group.

        Signing the next group overlaps the node's work on the previous one: each request
        starts before the next group is signed.
        """
        semaphore = asyncio.Semaphore(self.concurrency)

        async def send_group(group: list[_Flight]) -> list[object]:
            self.client.sends += len(group)
            try:
                return await self.client.batch([self.client.send_call(f.wire) for f in group])
            finally:
                semaphore.release()

        sending: list[tuple[list[_Flight], asyncio.Task[list[object]]]] = []
        room = self.window - len(in_flight)
        try:
            while queue and room > 0:
                group = [
                    self._prepare(queue.popleft(), stats)
                    for _ in range(min(self.batch_size, room, len(queue)))
                ]
                room -= len(group)
                await semaphore.acquire()
                sending.append((group, asyncio.create_task(send_group(group))))
                await asyncio.sleep(0)
            answers = await asyncio.gather(*(task for _, task in sending))
        finally:
            for _, task in sending:
                task.cancel()
        stale_blockhash = False
        for (group, _), results in zip(sending, answers, strict=True):
            for flight, result in zip(group, results, strict=True):
                stats.sent += 1
                if not isinstance(result, RpcCallError) or _already_processed(result):
                    in_flight[flight.signature] = flight
                elif _blockhash_unknown(result):
                    stale_blockhash = True
                    queue.appendleft(flight)
                elif (refused := preflight_error(result)) is not None:
                    raise refused from result
                else:
                    queue.append(flight)  # a refusal we do not understand: bounded retry
        if stale_blockhash:
            await self._refresh_blockhash(force=True)

    async def _poll_round(
        self,
        queue: deque[_Flight],
        in_flight: dict[str, _Flight],
        progress: Progress | None,
        wanted: int,
        poller: StatusPoller,
        stats: SendStats,
    ) -> int:
        if not in_flight:
            return 0
        signatures = list(in_flight)
        reached, height = await poller.poll(signatures, wanted)
        done = 0
        for signature, there in zip(signatures, reached, strict=True):
            flight = in_flight[signature]
            if there is None:
                if height > flight.last_valid_height:
                    del in_flight[signature]  # expired unseen: it can never land now
                    queue.append(flight)
            elif there:
                del in_flight[signature]
                done += 1
                stats.confirmed += 1
                stats.signatures.append(signature)
                if progress is not None:
                    progress.advance(flight.spec.payload_bytes, 1)
        return done


def _already_processed(error: RpcCallError) -> bool:
    text = f"{error} {error.data}"
    return "AlreadyProcessed" in text or "already been processed" in text


def _blockhash_unknown(error: RpcCallError) -> bool:
    text = f"{error} {error.data}"
    return "BlockhashNotFound" in text or "Blockhash not found" in text
