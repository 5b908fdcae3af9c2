"""Transactions as specs: what to sign, built by pure functions, no network.

``TxSpec`` is a transaction before it is signed (instructions, extra signers, the weight
bytes it carries); ``sign`` signs one; ``Transactions`` builds the curta program's for one
program, authority, payer and ``Budget`` (publish, seal, close, and a run's open, steps
and close); ``deploy_transactions.DeployTransactions`` the upgradeable loader's that
``deploy`` sends. The sender (``sender.py``) signs and lands them.

Compute units: on a real cluster the scheduler charges each transaction the compute units
it requests against a per-account budget per block, so a write asking for the default
200,000 lands ~60 per block per account. With ``Budget.limit_compute`` every transaction
asks for what it needs (measured on the program, with a margin) and, with a price, pays a
priority fee. The ~40 bytes those instructions take come out of each write's payload.

v1 transactions (SIMD-0385): where the cluster takes them, the transactions that gain from
room (publish's writes, deploy's buffer writes) go as v1, up to 4,096 bytes, with their
budget inline (``TransactionConfig``) instead of compute-budget instructions. A v1
transaction that leaves a field unset gets the least there is (0 compute units, 0 bytes of
loaded account data), so each always says both: the same units a legacy one asks for, and
the 64 MiB of loaded data a legacy one gets by default; with a price, its priority fee is
in whole lamports, the price times the limit rounded up, as a legacy one pays.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV1, TransactionConfig
from solders.pubkey import Pubkey
from solders.system_program import (
    AllocateParams,
    AssignParams,
    CreateAccountParams,
    TransferParams,
    allocate,
    assign,
    create_account,
    transfer,
)
from solders.transaction import Transaction, VersionedTransaction

from curta_chain import program
from curta_chain.artifact.layout import ModelConfig
from curta_chain.chain.features import TxVersion, TxVersionChoice
from curta_chain.chain.plan import NewAccount, PublishPlan, WritePiece
from curta_chain.constants import (
    MAX_COMPUTE_UNITS,
    MAX_LOADED_ACCOUNTS_DATA_SIZE,
    MAX_TRANSACTION_SIZE,
    MAX_V1_TRANSACTION_SIZE,
)
from curta_chain.inference import SamplingSettings
from curta_chain.protocol import sizes
from curta_chain.protocol.compute_budget import priority_lamports

# Compute units each transaction asks for: what scripts/bench_program_cu.py measures for the
# largest case (18 sections), plus the compute-budget and system instructions, with margin.
CREATE_MODEL_CU = 5_000
BIND_CU = 5_000
WRITE_CU = 1_000
BEGIN_SEALING_CU = 5_000
SEAL_STEP_CU = 40_000
REOPEN_CU = 5_000
CLOSE_CU = 5_000


STEP_CU = MAX_COMPUTE_UNITS
"""A step spends up to its budget (1.2 M estimated units) and asks for the most there is."""
CLOSE_RUN_CU = 5_000


def open_run_units(config: ModelConfig) -> int:
    """The compute units openRun asks for: it checks section zero's tables and tokenizer.

    Measured (LiteSVM, a1-program's build): 88,924 for a 259-token, 16-wide model with a
    16-position context; each vocabulary entry adds 13, each context position 80 and each
    unit of width (dim and hidden) about 100 (623,000 for the stories15M shape). A quarter
    more, for margin.
    """
    measured = (
        85_000
        + 13 * config.vocab_size
        + 80 * config.seq_len
        + 100 * (config.dim + config.hidden_dim)
    )
    return measured * 5 // 4


@dataclass(frozen=True)
class TxSpec:
    """One transaction to land: its instructions, signers besides the payer, bytes carried.

    ``config`` is a v1 transaction's inline budget (its instructions then hold no
    compute-budget ones); None for a legacy transaction.
    """

    instructions: tuple[Instruction, ...]
    signers: tuple[Keypair, ...] = ()
    payload_bytes: int = 0
    config: TransactionConfig | None = None

    @property
    def version(self) -> TxVersion:
        """The transaction's format."""
        return "legacy" if self.config is None else "v1"

    @property
    def size_limit(self) -> int:
        """The most bytes the signed transaction may take on the wire."""
        return MAX_TRANSACTION_SIZE if self.config is None else MAX_V1_TRANSACTION_SIZE


def message(spec: TxSpec, payer: Pubkey, blockhash: Hash) -> Message | MessageV1:
    """The message of ``spec`` paid by ``payer``: legacy, or v1 with its inline budget."""
    if spec.config is None:
        return Message.new_with_blockhash(spec.instructions, payer, blockhash)
    return MessageV1.try_compile(payer, spec.instructions, blockhash, spec.config)


def sign(
    spec: TxSpec, payer: Keypair, blockhash: Hash, cosigners: Sequence[Keypair] = ()
) -> Transaction | VersionedTransaction:
    """Sign ``spec`` with its payer, its own signers and the cosigners it needs.

    The payer pays the fee; of ``cosigners``, only those the instructions name as signers
    sign (a seal step needs none, a write needs the authority).
    """
    msg = message(spec, payer.pubkey(), blockhash)
    required = set(msg.account_keys[: msg.header.num_required_signatures])
    keys: dict[Pubkey, Keypair] = {}
    for keypair in (payer, *spec.signers, *cosigners):
        if keypair.pubkey() in required:
            keys.setdefault(keypair.pubkey(), keypair)
    if isinstance(msg, MessageV1):
        return VersionedTransaction(msg, list(keys.values()))
    return Transaction(list(keys.values()), msg, blockhash)


@dataclass(frozen=True)
class AutoPrice:
    """``--with-compute-unit-price auto``: a percentile of recent prices, at most ``cap``.

    The prices are what recent blocks paid to write the command's accounts
    (getRecentPrioritizationFees); ``fees.priced`` reads them. ``cap`` is the user's
    ``--max-compute-unit-price``; None: the default cap, above which nothing is sent.
    """

    percentile: int = 75
    cap: int | None = None


@dataclass(frozen=True)
class Budget:
    """Whether transactions carry compute-budget instructions, and the price if any.

    ``separate_fee_payer``: a fee payer other than the authority signs every transaction,
    which leaves a write 96 bytes less room (a key and a signature). ``auto_price``: the
    price is still to be read from the node (``fees.priced`` resolves it); until then the
    transactions carry a price of 0, so they have their final size. ``tx_version``: the
    format asked for the transactions that gain from room (``features.select_tx_version``
    reads the cluster's gate; a plan records what it chose).
    """

    limit_compute: bool = False
    compute_unit_price: int | None = None
    separate_fee_payer: bool = False
    auto_price: AutoPrice | None = None
    tx_version: TxVersionChoice = "auto"

    @property
    def priced(self) -> bool:
        """Whether transactions carry a compute-unit price (perhaps one still to be read)."""
        return self.compute_unit_price is not None or self.auto_price is not None

    def instructions(self, units: int) -> tuple[Instruction, ...]:
        """The compute-budget instructions for a transaction needing ``units``."""
        out: list[Instruction] = []
        if self.limit_compute or self.priced:
            out.append(set_compute_unit_limit(units))
        if self.priced:
            out.append(set_compute_unit_price(self.compute_unit_price or 0))
        return tuple(out)

    def config(self, units: int) -> TransactionConfig:
        """A v1 transaction's inline budget for ``units`` (see the module's docstring)."""
        price = self.compute_unit_price or 0
        return TransactionConfig(
            priority_fee=priority_lamports(units, price) if self.priced else None,
            compute_unit_limit=units,
            loaded_accounts_data_size_limit=MAX_LOADED_ACCOUNTS_DATA_SIZE,
        )

    def spec(
        self,
        units: int,
        instructions: Sequence[Instruction],
        version: TxVersion = "legacy",
        signers: tuple[Keypair, ...] = (),
        payload_bytes: int = 0,
    ) -> TxSpec:
        """A transaction of ``instructions`` needing ``units``, in ``version``'s format."""
        if version == "v1":
            return TxSpec(tuple(instructions), signers, payload_bytes, self.config(units))
        return TxSpec((*self.instructions(units), *instructions), signers, payload_bytes)

    def write_payload(self, version: TxVersion = "legacy") -> int:
        """The most weight bytes one write transaction can carry under this budget."""
        if version == "v1":
            return _v1_write_payload(self.priced, self.separate_fee_payer)
        # Sized for a limit and a price: without the price this leaves ~10 bytes unused.
        return program.max_write_payload(
            with_compute_budget=self.limit_compute or self.priced,
            fee_payer=self.separate_fee_payer,
        )


@cache
def _v1_write_payload(priced: bool, separate_fee_payer: bool) -> int:
    """The weight bytes of a v1 write: its size depends on which config fields are set."""
    authority, weight, program_id = (Pubkey(bytes([n] * 32)) for n in (1, 2, 3))
    payer = Pubkey(bytes([4] * 32)) if separate_fee_payer else authority
    budget = Budget(compute_unit_price=0 if priced else None)

    def write(data: bytes) -> MessageV1 | Message:
        ix = program.write_weights(program_id, authority, weight, 0, data)
        return message(budget.spec(WRITE_CU, (ix,), "v1"), payer, Hash.default())

    return sizes.largest_payload(write)


def new_account(payer: Pubkey, account: NewAccount, owner: Pubkey) -> tuple[Instruction, ...]:
    """Create ``account`` (its keypair signs the transaction) for ``owner``, funded by ``payer``.

    ``create_account`` refuses an address that already holds lamports, and anyone can send
    lamports to any address. So when the account's address holds some already, it
    allocates and assigns itself (it signs) and the payer sends only what the rent still
    needs.
    """
    address, space = account.address, account.size
    if not account.existing:
        params = CreateAccountParams(
            from_pubkey=payer, to_pubkey=address, lamports=account.rent, space=space, owner=owner
        )
        return (create_account(params),)
    top_up = (
        (transfer(TransferParams(from_pubkey=payer, to_pubkey=address, lamports=account.transfer)),)
        if account.transfer
        else ()
    )
    return (
        *top_up,
        allocate(AllocateParams(pubkey=address, space=space)),
        assign(AssignParams(pubkey=address, owner=owner)),
    )


@dataclass(frozen=True)
class Transactions:
    """The curta program's transactions for one program, authority, payer and budget.

    Attributes:
        program_id: the curta program.
        authority: the model's authority (it signs what the program asks it to).
        payer: who funds the accounts created (and pays the fees: ``Sender.payer``).
        budget: the compute-budget instructions each transaction carries.
    """

    program_id: Pubkey
    authority: Pubkey
    payer: Pubkey
    budget: Budget = field(default_factory=Budget)

    def create_model(
        self,
        model: Keypair,
        weights_hash: bytes,
        section_lengths: Sequence[int],
        funding: NewAccount,
    ) -> TxSpec:
        """Create the model account (``funding``) and declare its hash, in one transaction."""
        create = new_account(self.payer, funding, self.program_id)
        declare = program.create_model(
            self.program_id, self.authority, model.pubkey(), weights_hash, list(section_lengths)
        )
        return TxSpec((*self.budget.instructions(CREATE_MODEL_CU), *create, declare), (model,))

    def bind(self, model: Pubkey, weight: Keypair, section: int, funding: NewAccount) -> TxSpec:
        """Create weight account ``section`` (``funding``) and bind it, in one transaction.

        An account that exists but is bound to nothing could not have its rent recovered, so
        the two never go apart.
        """
        create = new_account(self.payer, funding, self.program_id)
        bind = program.bind_weight_account(
            self.program_id, self.authority, model, weight.pubkey(), section
        )
        return TxSpec((*self.budget.instructions(BIND_CU), *create, bind), (weight,))

    def writes(self, plan: PublishPlan, sections: Sequence[bytes]) -> list[TxSpec]:
        """One write transaction per planned piece, in the plan's transaction version."""
        return [
            self._write(plan.weight_accounts[p.section], sections, p, plan.tx_version)
            for p in plan.writes
        ]

    def _write(
        self, account: Pubkey, sections: Sequence[bytes], piece: WritePiece, version: TxVersion
    ) -> TxSpec:
        data = bytes(sections[piece.section][piece.offset : piece.offset + piece.length])
        write = program.write_weights(self.program_id, self.authority, account, piece.offset, data)
        return self.budget.spec(WRITE_CU, (write,), version, payload_bytes=piece.length)

    def begin_sealing(self, model: Pubkey) -> TxSpec:
        """Begin sealing ``model``."""
        ix = program.begin_sealing(self.program_id, self.authority, model)
        return self._authority(ix, BEGIN_SEALING_CU)

    def seal_step(
        self, model: Pubkey, weights: Sequence[Pubkey], label: int, chunk_bytes: int = 0
    ) -> TxSpec:
        """A seal step: it hashes the next chunk wherever the model's cursor is.

        ``weights`` are the weight accounts of one or two consecutive sections, the cursor's
        among them when it lands. ``label`` (any value: the program does not read it) makes
        each step its own transaction, so that many can be in flight at once; the steps land
        in any order. ``chunk_bytes`` is what the progress display counts for it.
        """
        ix = program.seal_step(self.program_id, model, weights, label)
        return TxSpec((*self.budget.instructions(SEAL_STEP_CU), ix), (), chunk_bytes)

    def reopens(self, plan: PublishPlan) -> list[TxSpec]:
        """One reopen per weight account of the plan's failed model that is still frozen."""
        return [
            self._authority(
                program.reopen(
                    self.program_id, self.authority, plan.model, plan.weight_accounts[i], i
                ),
                REOPEN_CU,
            )
            for i in plan.reopen_sections
        ]

    def closes(
        self, model: Pubkey, bound: Sequence[tuple[int, Pubkey]]
    ) -> tuple[list[TxSpec], TxSpec]:
        """Closing a model: one closeWeightAccount per bound ``(section, account)``, then the model.

        The first list may go out together; the model's close must wait until they have landed.
        """
        weights = [
            self._authority(
                program.close_weight_account(
                    self.program_id, self.authority, model, account, section
                ),
                CLOSE_CU,
            )
            for section, account in bound
        ]
        last = self._authority(
            program.close_model(self.program_id, self.authority, model), CLOSE_CU
        )
        return weights, last

    def _authority(self, instruction: Instruction, units: int) -> TxSpec:
        """A transaction of one authority instruction (begin sealing, reopen, close)."""
        return TxSpec((*self.budget.instructions(units), instruction))

    # A run's transactions: the payer opens the run, pays its rent and gets it back. They
    # always set their own compute-unit limit (and the price, if any): a step asks for far
    # more than the default, openRun for more or less with the vocabulary.

    def _run_budget(self, units: int) -> tuple[Instruction, ...]:
        return replace(self.budget, limit_compute=True).instructions(units)

    def open_run(
        self,
        run: Keypair,
        funding: NewAccount,
        model: Pubkey,
        section_zero: Pubkey,
        capacity: int,
        prompt: bytes | Sequence[int],
        settings: SamplingSettings,
        config: ModelConfig,
        version: TxVersion = "legacy",
    ) -> TxSpec:
        """Create the run account (``funding``; the run's keypair signs) and open the run.

        ``prompt`` is UTF-8 text, or token ids (an empty text's run opens with ``(1,)``); a
        ``version`` v1 transaction has room for the longest prompt openRun takes.
        """
        create = new_account(self.payer, funding, self.program_id)
        ix = program.open_run(
            self.program_id,
            self.payer,
            run.pubkey(),
            model,
            section_zero,
            capacity,
            prompt,
            settings.temperature,
            settings.top_p,
            settings.seed,
        )
        budget = replace(self.budget, limit_compute=True)
        return budget.spec(open_run_units(config), (*create, ix), version, (run,))

    def step(self, run: Pubkey, model: Pubkey, weights: Sequence[Pubkey], label: int) -> TxSpec:
        """A step of ``run``; ``weights[0]`` is section zero's account. Anyone may send it."""
        ix = program.step(self.program_id, run, model, weights, label)
        return TxSpec((*self._run_budget(STEP_CU), ix))

    def close_run(self, run: Pubkey) -> TxSpec:
        """Close ``run`` (in any state): its lamports back to the payer, its opener."""
        return TxSpec(
            (*self._run_budget(CLOSE_RUN_CU), program.close_run(self.program_id, self.payer, run))
        )
