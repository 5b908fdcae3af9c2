"""seal: drive the on-chain hash one chunk per transaction, checked by a local mirror.

The mirror reads every section once, when the seal begins, and computes every step itself.
The chain freezes a section's weight account when the seal enters it, so the bytes hashed
are the bytes kept; a write its authority lands in a section the seal has not entered yet
changes what the chain will hash, and shows as a mismatch naming that section.

Order-free and pipelined: a seal step hashes the next chunk wherever the cursor is, so k
landed steps are k chunks hashed in whatever order they landed. Each step names the
cursor's section and the next one, so every step up to the end of the next section goes out
at once (each a distinct transaction by its label), as many in flight as the per-account
compute limit lets land in a block, and exactly as many as there are chunks. While they
land the mirror reads the model account (at a slot the chain has reached) and compares
every state it sees, the chunk count, cursor and running hash, with its own at that count;
any disagreement stops the seal at once and names the section and byte range.

Given the artifact, the mirror also knows the hash each chunk should give, and a seal
that ends failed names the first chunk whose bytes differ from the artifact. A seal
interrupted at any point resumes from the model's cursor: the mirror first checks the
chain got there honestly.

Sealing an uploading model can only end sealed if the chain holds the artifact's bytes. So
given the artifact, ``seal`` first compares the chain's bytes with it and refuses, sending
nothing, while any differ (the upload is not finished); without it, it says what sealing
does before it begins.
"""

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact, HashStep, hash_steps
from curta_chain.chain.accounts import ZERO_KEY, read_bound_sections, require_model
from curta_chain.chain.context import ChainContext
from curta_chain.chain.effects import Counted, ReadBack
from curta_chain.chain.fees import estimate_fees
from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.chain.seal_mirror import SealMirror
from curta_chain.chain.sender import wait_for_signature
from curta_chain.chain.specs import SEAL_STEP_CU, Transactions, TxSpec
from curta_chain.chain.watch import RetriesOnly, round_sender, while_watching
from curta_chain.constants import ACCOUNT_CU_LIMIT
from curta_chain.errors import AccountError, ProgramError
from curta_chain.program import MODEL_ACCOUNT_SIZE, ModelAccount, ModelState


def resume_hint(address: Pubkey) -> str:
    """What a give-up tells the user: sealing resumes from the model's cursor."""
    return f"rerun `curta-chain seal {address}` to resume"


@dataclass(frozen=True)
class SealResult:
    """How a seal ended."""

    model: Pubkey
    state: ModelState
    transactions: int
    chunks: int
    seconds: float
    declared_hash: bytes
    running_hash: bytes
    first_bad_chunk: HashStep | None
    """With the artifact: the first chunk whose chain bytes hash differently from it."""
    begin_signature: str | None = None
    last_signature: str | None = None
    """The signature of the last seal step this run landed."""

    def signature_lines(self) -> list[str]:
        """``Signature: ...`` lines for what this run landed."""
        out = []
        if self.begin_signature:
            out.append(f"Signature: {self.begin_signature} (begin sealing)")
        if self.last_signature and self.last_signature != self.begin_signature:
            out.append(f"Signature: {self.last_signature} (last seal step)")
        return out

    def describe(self) -> str:
        """One line saying how the seal ended."""
        if self.state == ModelState.SEALED:
            return f"sealed {self.model}: weights hash {self.running_hash.hex()}"
        line = (
            f"failed {self.model}: the chain's bytes hash to {self.running_hash.hex()}, "
            f"declared {self.declared_hash.hex()}"
        )
        if self.first_bad_chunk is not None:
            c = self.first_bad_chunk
            line += (
                f"; first differing chunk: section {c.section} bytes "
                f"{c.offset}..{c.offset + c.length}"
            )
        return line

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        bad = self.first_bad_chunk
        return {
            "model": str(self.model),
            "state": self.state.name.lower(),
            "transactions": self.transactions,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "declared_hash": self.declared_hash.hex(),
            "running_hash": self.running_hash.hex(),
            "first_bad_chunk": None
            if bad is None
            else {"section": bad.section, "offset": bad.offset, "length": bad.length},
            "signatures": {"begin_sealing": self.begin_signature, "last_step": self.last_signature},
        }


async def seal_cost(ctx: ChainContext, address: Pubkey) -> tuple[int, int]:
    """(transactions, fee lamports) that sealing the model from where it stands sends.

    ``ctx.payer`` pays the fees; ``ctx.authority`` begins the seal.

    Raises:
        AccountError: there is no curta model at ``address``.
    """
    model = await require_model(ctx.client, ctx.program_id, address)
    if model.state not in (ModelState.UPLOADING, ModelState.SEALING):
        return 0, 0
    steps = model.total_chunks - model.chunks_hashed
    txs = ctx.transactions
    kinds = [(txs.seal_step(address, [model.sections[0].weight_account], 0), steps)]
    if model.state == ModelState.UPLOADING:
        kinds.append((txs.begin_sealing(address), 1))
    fee = await estimate_fees(ctx.client, ctx.payer.pubkey(), kinds, ctx.reporter)
    return steps + int(model.state == ModelState.UPLOADING), fee


async def seal(
    ctx: ChainContext,
    address: Pubkey,
    artifact: Artifact | None = None,
    check_upload: bool = True,
    before_sending: Callable[[], Awaitable[None]] | None = None,
    account_cu_limit: int = ACCOUNT_CU_LIMIT,
) -> SealResult:
    """Begin sealing if the model is still uploading, then crank it to sealed or failed.

    ``ctx.payer`` pays the fees; ``ctx.authority`` begins the seal (anyone may crank the
    steps). With the artifact and ``check_upload``, an upload that is not the artifact's is
    refused before anything is sent; without ``check_upload`` it is sealed, to end failed.
    ``before_sending`` is awaited once every check has passed, just before the first
    transaction (the CLI says what sealing locks, checks the funds and asks there).
    ``account_cu_limit`` (the compute units a block may spend on one writable account)
    bounds the steps in flight: every step writes the model account.

    Raises:
        AccountError: the model is missing, not a model, or not ready to seal; or, given
            the artifact, the chain's bytes are not yet the artifact's (nothing is sent).
        MirrorMismatchError: the chain's running hash or cursor disagrees with the mirror.
        ProgramError: the program refused a step (named from the IDL).
    """
    client, program_id, reporter = ctx.client, ctx.program_id, ctx.reporter
    sender = ctx.sender_for(resume_hint(address))
    txs = ctx.transactions
    started = time.monotonic()
    model = await require_model(client, program_id, address)
    since = client.context_slot  # this run's transactions land after it
    _check_sealable(address, model)
    processed = RpcClient(client.transport, "processed")
    begin_signature = None
    if model.state == ModelState.UPLOADING:
        _check_authority(address, model, ctx.authority)
        checked = artifact is not None and check_upload
        if checked and artifact is not None:
            with reporter.waiting("the chain's bytes to be read and compared with the artifact"):
                await _check_uploaded(client, program_id, address, model, artifact)
        _check_bound(address, model)
        if before_sending is not None:
            await before_sending()
        if not checked:
            reporter.note(
                f"sealing {address} freezes each of its {len(model.sections)} weight accounts "
                f"as the seal reaches it. If their bytes do not hash to the declared hash, the "
                f"seal ends failed and `curta-chain publish` must reopen and rewrite them (give "
                f"`seal` the artifact to check the bytes first)"
            )
        begun = ReadBack(
            processed,
            [address],
            lambda _, info: info is not None and _state(info) not in (None, ModelState.UPLOADING),
            MODEL_ACCOUNT_SIZE,
        )
        try:
            began = await sender.send(
                [txs.begin_sealing(address)], what="the seal's beginning", effects=begun
            )
        except ProgramError as exc:
            # An earlier run's beginning (on its way when that run stopped) landed first.
            if exc.name != "ModelNotUploading":
                raise
            model = await _read_at(processed, [sender.client], program_id, address)
            if model.state == ModelState.UPLOADING:
                raise
        else:
            begin_signature = began.last_signature or None
            model = await require_model(client, program_id, address)
            reporter.line(f"began sealing {address}: each section freezes as the seal enters it")
    elif before_sending is not None:
        await before_sending()
    with reporter.waiting("the weight accounts' bytes to be read"):
        sections = await read_bound_sections(client, program_id, address, model)
    mirror = SealMirror(list(hash_steps(sections)))
    expected = _expected_steps(artifact, sections)
    mirror.check(model)
    done = model.chunks_hashed
    if done and model.state == ModelState.SEALING:
        step = mirror.steps[done]
        reporter.note(
            f"resuming the seal at chunk {done + 1} of {len(mirror.steps)} "
            f"(section {step.section} offset {step.offset:,})"
        )
    reader = RpcClient(client.transport, client.commitment)
    bar = reporter.progress(
        "seal",
        sum(len(s) for s in sections),
        len(mirror.steps),
        done_bytes=sum(step.length for step in mirror.steps[:done]),
        done_transactions=done,
    )
    last_seen = ""
    cranked = False
    shown = [done]  # the chunks the bar counts: the chain's, whoever hashed them

    def see(model: ModelAccount) -> ModelAccount:
        mirror.check(model)
        steps = mirror.steps[shown[0] : model.chunks_hashed]
        bar.advance(sum(step.length for step in steps), len(steps))
        shown[0] = max(shown[0], model.chunks_hashed)
        return model

    async def chunks() -> int:
        return (await _read_at(processed, [sender.client], program_id, address)).chunks_hashed

    async def look() -> None:
        see(await _read_at(processed, [sender.client], program_id, address))

    try:
        while model.state == ModelState.SEALING:
            cranked = True
            specs = _round(txs, address, model, mirror, done)
            try:
                with round_sender(sender, min(len(specs), account_cu_limit // SEAL_STEP_CU)):
                    counted_steps = Counted(chunks, done)
                    progress = RetriesOnly(bar)
                    sending = sender.send(specs, progress, "processed", effects=counted_steps)
                    sent = await while_watching(sending, look)
            except ProgramError as exc:
                # Other cranks moved the cursor: an earlier run's steps, on their way when it
                # stopped, landing after this run read the chain, sealed the model
                # (ModelNotSealing) or took the cursor past this round's two sections
                # (WrongWeightAccount). The chain's count goes on; anything else is real.
                model = await _read_at(processed, [sender.client], program_id, address)
                if not _overtaken(exc, model, mirror.steps[done].section):
                    raise
            else:
                last_seen = sent.last_signature or last_seen
                done += len(specs)
                model = await _read_at(processed, [sender.client], program_id, address)
            # Never fewer chunks than this run's steps that landed; more if others cranked.
            mirror.check(model, max(done, model.chunks_hashed))
            done = see(model).chunks_hashed
    finally:
        bar.close()
    if last_seen:
        with reporter.waiting(f"the last seal step to be {client.commitment}"):
            await wait_for_signature(client, last_seen)
    ours: list[str] = []
    if cranked:
        # At our commitment, at a slot no older than the last state seen (others' steps too).
        model = await _read_at(reader, [processed, sender.client], program_id, address)
        mirror.check(model, done)
    if cranked or begin_signature:
        # What this run landed, as the chain lists it: rounds others' steps overtook (a
        # refusal ended them) landed steps their sends never counted.
        floor = max(reader.context_slot, since)
        listed = await reader.signatures_for(address, since + 1, min_context_slot=floor)
        ours = [signature for signature in listed if signature in sender.own_signatures]
    steps = [signature for signature in ours if signature != begin_signature]
    first_bad = next(
        (
            mine
            for mine, want in zip(mirror.steps, expected, strict=False)
            if mine.running != want.running
        ),
        None,
    )
    return SealResult(
        model=address,
        state=model.state,
        transactions=len(ours),
        chunks=len(mirror.steps),
        seconds=time.monotonic() - started,
        declared_hash=model.declared_hash,
        running_hash=model.running_hash,
        first_bad_chunk=first_bad,
        begin_signature=begin_signature,
        last_signature=steps[-1] if steps else None,
    )


def _round(
    txs: Transactions, address: Pubkey, model: ModelAccount, mirror: "SealMirror", done: int
) -> list[TxSpec]:
    """The steps that may all be in flight at once from chunk ``done``.

    A step names the cursor's section and the next one (the program takes one or two
    consecutive slots and uses the cursor's): so every step up to the end of the next
    section goes out together, each distinct by its label, landing in any order.
    """
    steps, slots = mirror.steps, model.sections
    first = steps[done].section
    pair = [first] if first + 1 == len(slots) else [first, first + 1]
    weights = [slots[i].weight_account for i in pair]
    end = next((i for i in range(done, len(steps)) if steps[i].section > pair[-1]), len(steps))
    return [txs.seal_step(address, weights, i, steps[i].length) for i in range(done, end)]


def _overtaken(exc: ProgramError, model: ModelAccount, first: int) -> bool:
    """Whether ``exc`` refused a step only because others' steps moved the cursor on.

    A round starting in section ``first`` names it and the next: a step is refused as
    naming neither only once the cursor has left both, and as not sealing only once the
    seal has ended.
    """
    if model.state != ModelState.SEALING:
        return exc.name == "ModelNotSealing"
    return exc.name == "WrongWeightAccount" and model.cursor_section > first + 1


async def _read_at(
    client: RpcClient, seen: Sequence[RpcClient], program_id: Pubkey, address: Pubkey
) -> ModelAccount:
    """The model, read at a slot no older than any of ``seen`` read at or saw land."""
    floor = max(max(c.context_slot, c.min_context_slot or 0) for c in (client, *seen))
    client.min_context_slot = floor or None
    return await require_model(client, program_id, address)


def _check_authority(address: Pubkey, model: ModelAccount, authority: Keypair) -> None:
    if model.authority != authority.pubkey():
        raise AccountError(
            f"model {address} is still uploading and only its authority {model.authority} can "
            f"begin sealing; pass its keypair with -k"
        )


async def _check_uploaded(
    client: RpcClient, program_id: Pubkey, address: Pubkey, model: ModelAccount, artifact: Artifact
) -> None:
    """Refuse to begin sealing unless the chain holds exactly ``artifact``'s bytes."""
    where = f"{artifact.source or 'the artifact'}"
    if model.declared_hash != artifact.weights_hash():
        raise AccountError(
            f"model {address} declares hash {model.declared_hash.hex()}, but {where} hashes to "
            f"{artifact.weights_hash().hex()}: not this model's artifact; nothing was sent"
        )
    _check_bound(address, model)
    chain = await read_bound_sections(client, program_id, address, model)
    differing = {
        i: count
        for i, (section, theirs) in enumerate(zip(artifact.sections, chain, strict=True))
        if (count := _differing_bytes(bytes(section), theirs))
    }
    if differing:
        size = sum(differing.values())
        raise AccountError(
            f"model {address} is not fully uploaded: {size:,} "
            f"{'byte differs' if size == 1 else 'bytes differ'} in sections {list(differing)} "
            f"from {where}; finish with `curta-chain publish {where}` "
            f"before sealing (sealing now would freeze them and end failed); nothing was sent"
        )


def _differing_bytes(ours: bytes, theirs: bytes) -> int:
    a = np.frombuffer(ours, dtype=np.uint8)
    b = np.frombuffer(theirs, dtype=np.uint8)
    return int(np.count_nonzero(a != b))


def _state(info: AccountInfo) -> ModelState | None:
    """The state of the model ``info`` holds (None: it holds no model)."""
    try:
        return ModelAccount.from_bytes(info.data).state
    except AccountError:
        return None


def _check_bound(address: Pubkey, model: ModelAccount) -> None:
    unbound = [i for i, slot in enumerate(model.sections) if slot.weight_account == ZERO_KEY]
    if unbound:
        raise AccountError(
            f"model {address}: sections {unbound} have no weight account yet; finish "
            f"`curta-chain publish` first"
        )


def _check_sealable(address: Pubkey, model: ModelAccount) -> None:
    """Refuse a model being closed, or a failed one being reopened (its bytes may change)."""
    if model.state == ModelState.CLOSING:
        raise AccountError(f"model {address} is being closed: it cannot be sealed")
    reopened = model.section_count - model.frozen_count
    if model.state == ModelState.FAILED and reopened:
        raise AccountError(
            f"model {address} failed and {reopened} of its {model.section_count} weight "
            f"accounts are reopened already: `curta-chain publish` finishes reopening and "
            f"rewriting it, then seal again"
        )


def _expected_steps(artifact: Artifact | None, chain: list[bytes]) -> list[HashStep]:
    """The artifact's steps, when it has the chain's section lengths (else none to compare)."""
    if artifact is None or [len(s) for s in artifact.sections] != [len(s) for s in chain]:
        return []
    return list(hash_steps(artifact.sections))
