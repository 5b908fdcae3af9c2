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
sender waits for, and every signature it lands, go to the reporter and ``stats``.
"""

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction

from curta_chain.chain.rpc import RpcCallError, RpcClient, preflight_error, transaction_error
from curta_chain.constants import (
    COMMITMENT_RANK,
    MAX_TRANSACTION_SIZE,
    SEND_TRANSACTION_PREFLIGHT_FAILURE,
)
from curta_chain.errors import ChainError, RpcError, SendGaveUpError
from curta_chain.reporting import NullReporter, Progress, Reporter

CONFIRM_TIMEOUT = 60.0
"""Seconds ``wait_for_signature`` waits for a transaction someone else sent."""
FRESH_BLOCKHASH_WAIT = 60.0
"""Seconds a new sender waits for the node's next blockhash (one slot, normally)."""
BLOCKHASH_MAX_AGE = 10.0
"""Seconds a blockhash is used for new transactions (it stays valid for ~60 s)."""


@dataclass(frozen=True)
class TxSpec:
    """One transaction to land: its instructions, signers besides the payer, bytes carried."""

    instructions: tuple[Instruction, ...]
    signers: tuple[Keypair, ...] = ()
    payload_bytes: int = 0


async def estimate_fees(
    client: RpcClient, payer: Pubkey, kinds: Sequence[tuple[TxSpec, int]]
) -> int:
    """What the node says ``count`` transactions like each spec cost, summed.

    The fee is what validators charge, whatever the node says: a node that inflates it only
    makes the cost shown (and the funds check) higher.
    """
    if not kinds:
        return 0
    blockhash, _ = await client.latest_blockhash()
    fees = await asyncio.gather(
        *(
            client.fee_for_message(Message.new_with_blockhash(spec.instructions, payer, blockhash))
            for spec, _ in kinds
        )
    )
    return sum(fee * count for fee, (_, count) in zip(fees, kinds, strict=True))


def sign(
    spec: TxSpec, payer: Keypair, blockhash: Hash, cosigners: Sequence[Keypair] = ()
) -> Transaction:
    """Sign ``spec`` with its payer, its own signers and the cosigners it needs.

    The payer pays the fee; of ``cosigners``, only those the instructions name as signers
    sign (a seal step needs none, a write needs the authority).
    """
    message = Message.new_with_blockhash(spec.instructions, payer.pubkey(), blockhash)
    required = set(message.account_keys[: message.header.num_required_signatures])
    keys: dict[object, Keypair] = {}
    for keypair in (payer, *spec.signers, *cosigners):
        if keypair.pubkey() in required:
            keys.setdefault(keypair.pubkey(), keypair)
    return Transaction(list(keys.values()), message, blockhash)


@dataclass
class SendStats:
    """What a ``send`` did."""

    confirmed: int = 0
    last_signature: str = ""
    signatures: list[str] = field(default_factory=list)
    """Every confirmed transaction's signature, in the order they were confirmed."""
    sent: int = 0
    resigned: int = 0
    seconds: float = 0.0


@dataclass
class _Flight:
    spec: TxSpec
    attempts: int
    signature: str = ""
    wire: bytes = b""
    last_valid_height: int = 0


@dataclass
class Sender:
    """Lands a list of transactions through an ``RpcClient`` as fast as the node allows."""

    client: RpcClient
    payer: Keypair
    resume_hint: str = "rerun the same command to resume"
    reporter: Reporter = field(default_factory=NullReporter)
    cosigners: tuple[Keypair, ...] = ()
    # In flight at once: enough to cover a slot or two of confirmation latency at ~2,000
    # writes/s; also what a crash can make land twice (same bytes, one fee each).
    window: int = 2048
    batch_size: int = 128
    max_attempts: int = 5
    poll_interval: float = 0.05
    concurrency: int = 4
    stats: SendStats = field(default_factory=SendStats)
    _blockhash: Hash | None = None
    _last_valid: int = 0
    _fetched_at: float = 0.0

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

        Raises:
            ProgramError: a transaction failed in the program (the error named in the IDL).
            SendGaveUpError: the node stayed unreachable, or a transaction did not land after
                ``max_attempts`` signings; the message says how to resume.
        """
        started = time.monotonic()
        confirmed_before = self.stats.confirmed
        level = commitment or self.client.commitment
        wanted = COMMITMENT_RANK[level]
        queue: deque[_Flight] = deque(_Flight(spec, 0) for spec in specs)
        in_flight: dict[str, _Flight] = {}
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
                    await self._send_round(queue, in_flight)
                    done = await self._poll_round(queue, in_flight, progress, wanted)
                    if not done and in_flight:
                        await asyncio.sleep(self.poll_interval)
        except RpcError as exc:
            if isinstance(exc, SendGaveUpError) or not self.client.sends:
                raise  # a give-up says how to resume; with nothing sent there is no resuming
            # Counted from the confirmations: a group being sent is in neither queue nor map.
            unconfirmed = len(specs) - (self.stats.confirmed - confirmed_before)
            raise SendGaveUpError(
                f"gave up with {unconfirmed} of {len(specs)} transactions not "
                f"confirmed: {exc}; {self.resume_hint}"
            ) from exc
        self.stats.seconds += time.monotonic() - started
        return self.stats

    def _prepare(self, flight: _Flight) -> _Flight:
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
            self.stats.resigned += 1
        flight.attempts += 1
        flight.signature = str(tx.signatures[0])
        flight.wire = wire
        flight.last_valid_height = self._last_valid
        return flight

    async def _refresh_blockhash(self, force: bool = False) -> None:
        if self._blockhash is None:
            await self._first_blockhash()
        elif force or time.monotonic() - self._fetched_at > BLOCKHASH_MAX_AGE:
            self._blockhash, self._last_valid = await self.client.latest_blockhash()
            self._fetched_at = time.monotonic()

    async def _first_blockhash(self) -> None:
        """Take a blockhash newer than the one current when this sender starts.

        A transaction is its signature: the same instructions signed under the same
        blockhash are one transaction, which the node processes once. An earlier run (a seal
        before a reopen, a publish before the chain's bytes were changed) may have signed
        these very instructions under the blockhash current now, and the node would take
        ours for a replay of it. The next blockhash rules that out, for one slot's wait.
        """
        current, _ = await self.client.latest_blockhash()
        deadline = time.monotonic() + FRESH_BLOCKHASH_WAIT
        with self.reporter.waiting("the node's next block (a fresh blockhash)"):
            while True:
                blockhash, last_valid = await self.client.latest_blockhash()
                if blockhash != current:
                    break
                if time.monotonic() > deadline:
                    raise RpcError(
                        f"{self.client.url}: the blockhash did not change in "
                        f"{FRESH_BLOCKHASH_WAIT:.0f} s: is the node producing blocks?"
                    )
                await asyncio.sleep(self.poll_interval)
        self._blockhash, self._last_valid = blockhash, last_valid
        self._fetched_at = time.monotonic()

    async def _send_round(self, queue: deque[_Flight], in_flight: dict[str, _Flight]) -> None:
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
                    self._prepare(queue.popleft())
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
                self.stats.sent += 1
                if not isinstance(result, RpcCallError) or _already_processed(result):
                    in_flight[flight.signature] = flight
                elif _blockhash_unknown(result):
                    stale_blockhash = True
                    queue.appendleft(flight)
                elif (
                    result.code == SEND_TRANSACTION_PREFLIGHT_FAILURE
                    and isinstance(result.data, dict)
                    and result.data.get("err")
                ):
                    raise preflight_error(result)
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
    ) -> int:
        if not in_flight:
            return 0
        signatures = list(in_flight)
        statuses, height = await asyncio.gather(
            self.client.signature_statuses(signatures), self.client.block_height()
        )
        done = 0
        for signature, status in zip(signatures, statuses, strict=True):
            flight = in_flight[signature]
            if status is None:
                if height > flight.last_valid_height:
                    del in_flight[signature]  # expired unseen: it can never land now
                    queue.append(flight)
                continue
            if status.err is not None:
                raise transaction_error(status.err)
            if COMMITMENT_RANK.get(status.confirmation or "processed", 0) >= wanted:
                del in_flight[signature]
                done += 1
                self.stats.confirmed += 1
                self.stats.last_signature = signature
                self.stats.signatures.append(signature)
                if progress is not None:
                    progress.advance(flight.spec.payload_bytes, 1)
        return done


async def wait_for_signature(
    client: RpcClient, signature: str, timeout: float = CONFIRM_TIMEOUT
) -> None:
    """Wait until a transaction the node sent itself (an airdrop) reaches our commitment.

    Raises:
        ChainError: the transaction failed.
        RpcError: it was not confirmed within ``timeout`` seconds.
    """
    wanted = COMMITMENT_RANK[client.commitment]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (status,) = await client.signature_statuses([signature])
        if status is not None:
            if status.err is not None:
                raise transaction_error(status.err)
            if COMMITMENT_RANK.get(status.confirmation or "processed", 0) >= wanted:
                return
        await asyncio.sleep(0.1)
    raise RpcError(f"{signature} was not confirmed within {timeout:.0f} s")


def _already_processed(error: RpcCallError) -> bool:
    text = f"{error} {error.data}"
    return "AlreadyProcessed" in text or "already been processed" in text


def _blockhash_unknown(error: RpcCallError) -> bool:
    text = f"{error} {error.data}"
    return "BlockhashNotFound" in text or "Blockhash not found" in text
