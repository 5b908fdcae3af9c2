"""Prove that no sign-extended 32-bit result is read as 64 bits: what makes clang's v3 code safe.

clang-14's ``-mcpu=v3`` turns on eBPF's ALU32 (``w`` registers) together with JMP32, and
eBPF zero-extends every 32-bit result, so clang drops the zero extension it would otherwise
write. SBPF v3 sign-extends the results of ``add32``, ``sub32`` and ``mul32`` instead
(solana-sbpf ``src/interpreter.rs``: ``sign_extension`` keeps the sign unless
``explicit_sign_extension_of_results``, which ``src/program.rs`` enables for v2 only); the
other 32-bit operations zero-extend as eBPF does. The two machines therefore differ only in
the upper half of a register written by one of those three instructions, and only when bit
31 of the result is set. If no instruction ever reads such an upper half, the program
computes the same on both.

``check_upper_halves`` proves that on the linked bytecode with a forward data-flow over
every path: a register is *tainted* after ``add32``/``sub32``/``mul32`` and clean again
once anything else writes it (``mov32 wX, wX`` included). A tainted register may be read
by 32-bit operations (ALU32, JMP32), stored with a 1-, 2- or 4-byte store, or copied with
``mov64`` (the copy is tainted); any other read (a 64-bit operand, comparison or store, an
address, a syscall or ``callx`` argument, the entrypoint's return value) stops the link.
Calls: a local call passes the caller's registers to the callee and returns with r1-r5
clobbered, r6-r9 as they were (the VM restores them) and r0 tainted if the callee can
return a tainted r0. The check is conservative: it may refuse a correct program, never
accept a wrong one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from curta_chain.errors import BuildError

# Instruction classes (low three bits of the opcode) and the fields of ALU/JMP opcodes.
_LD, _LDX, _ST, _STX, _ALU32, _JMP, _JMP32, _ALU64 = range(8)
_SOURCE_REGISTER = 0x08
_OP_ADD, _OP_SUB, _OP_MUL, _OP_MOV, _OP_END = 0x00, 0x10, 0x20, 0xB0, 0xD0
_OP_JA, _OP_CALL, _OP_EXIT = 0x00, 0x80, 0x90
_SIZE_DW = 0x18
_LDDW = 0x18
_SIGN_EXTENDING = {_OP_ADD: "add32", _OP_SUB: "sub32", _OP_MUL: "mul32"}


class SignExtensionError(BuildError):
    """A sign-extended 32-bit result is read as 64 bits.

    Attributes:
        detail: what was read where, without the objects' names.
        source_offset: the ``.text`` byte offset of the ``add32``/``sub32``/``mul32`` that
            wrote it: the code compiled for ALU32 is there (the linker names its object).
        obj: the index of the object holding ``source_offset``, set by the linker.
    """

    def __init__(self, origin: str, detail: str, source_offset: int) -> None:
        super().__init__(f"{origin}: {detail}: compile with -mcpu=v2")
        self.detail = detail
        self.source_offset = source_offset
        self.obj: int | None = None


_State = tuple[int | None, ...]
"""Per register r0..r10: the pc of the instruction whose sign-extended result it holds, or None."""
_CLEAN: _State = (None,) * 11


@dataclass(frozen=True)
class _Insn:
    pc: int
    opcode: int
    dst: int
    src: int
    off: int
    imm: int

    @property
    def cls(self) -> int:
        return self.opcode & 0x07

    @property
    def op(self) -> int:
        return self.opcode & 0xF0

    @property
    def uses_register(self) -> bool:
        return bool(self.opcode & _SOURCE_REGISTER)


def _decode(text: bytes) -> dict[int, _Insn]:
    insns: dict[int, _Insn] = {}
    pc = 0
    while pc * 8 < len(text):
        opcode, regs, off, imm = struct.unpack_from("<BBhi", text, pc * 8)
        insns[pc] = _Insn(pc, opcode, regs & 0x0F, regs >> 4, off, imm)
        pc += 2 if opcode == _LDDW else 1
    return insns


def _set(state: _State, register: int, value: int | None) -> _State:
    return (*state[:register], value, *state[register + 1 :])


def _join(a: _State, b: _State) -> _State:
    return tuple(x if x is not None else y for x, y in zip(a, b, strict=True))


def _mask(state: _State) -> int:
    return sum(1 << r for r, origin in enumerate(state) if origin is not None)


class _Flow:
    """The data-flow over one program's bytecode."""

    def __init__(
        self, text: bytes, entry_pc: int, syscall_arguments: Mapping[int, int], origin: str
    ) -> None:
        self.insns = _decode(text)
        self.syscall_arguments = syscall_arguments
        self.entry_pc = entry_pc
        self.origin = origin
        self.state: dict[int, _State] = {}
        self.function_of: dict[int, int] = {}
        self.returns_tainted: dict[int, int | None] = {}
        self.callers: dict[int, set[int]] = {}
        self.work: list[int] = []

    def _read64(self, insn: _Insn, state: _State, register: int, how: str) -> None:
        source = state[register]
        if source is not None:
            raise SignExtensionError(
                self.origin,
                f".text+{insn.pc * 8:#x}: {how} reads r{register} as 64 bits, "
                f"but its upper half is the sign extension SBPF v3 gives the "
                f"{_SIGN_EXTENDING[self.insns[source].op]} at .text+{source * 8:#x} "
                "(clang assumed zero extension)",
                source * 8,
            )

    def _flow_to(self, pc: int, state: _State, function: int) -> None:
        if pc not in self.insns:
            raise BuildError(f"{self.origin}: .text+{pc * 8:#x}: control flow leaves the code")
        owner = self.function_of.setdefault(pc, function)
        if owner != function:  # clang never shares code between functions; refuse, not guess
            raise BuildError(
                f"{self.origin}: .text+{pc * 8:#x}: reached from the functions at "
                f".text+{owner * 8:#x} and .text+{function * 8:#x}"
            )
        old = self.state.get(pc)
        new = state if old is None else _join(old, state)
        if old is None or _mask(new) != _mask(old):
            self.state[pc] = new
            self.work.append(pc)

    def _returned(self, function: int, r0: int | None) -> None:
        if r0 is not None and self.returns_tainted.get(function) is None:
            self.returns_tainted[function] = r0
            for site in self.callers.get(function, ()):  # revisit the instruction after each call
                self.work.append(site)

    def _step(self, insn: _Insn, state: _State) -> Iterator[tuple[int, _State]]:
        """Check one instruction's reads; yield each successor pc with the state it gets."""
        cls, op, dst, src = insn.cls, insn.op, insn.dst, insn.src
        nxt = insn.pc + (2 if insn.opcode == _LDDW else 1)
        if cls == _LD:
            yield nxt, _set(state, dst, None)
        elif cls == _LDX:
            self._read64(insn, state, src, "a load's address")
            yield nxt, _set(state, dst, None)
        elif cls in (_ST, _STX):
            self._read64(insn, state, dst, "a store's address")
            if cls == _STX and insn.opcode & 0x18 == _SIZE_DW:
                self._read64(insn, state, src, "an 8-byte store")
            yield nxt, state
        elif cls == _ALU32:
            if op == _OP_END and insn.imm == 64:
                self._read64(insn, state, dst, "a 64-bit byte swap")
                yield nxt, state
            elif op == _OP_END:
                yield nxt, _set(state, dst, None)
            else:  # 32-bit operands: only the lower halves are read
                yield nxt, _set(state, dst, insn.pc if op in _SIGN_EXTENDING else None)
        elif cls == _ALU64:
            if op == _OP_MOV:
                yield nxt, _set(state, dst, state[src] if insn.uses_register else None)
            else:
                self._read64(insn, state, dst, "a 64-bit operation")
                if insn.uses_register:
                    self._read64(insn, state, src, "a 64-bit operation")
                yield nxt, _set(state, dst, None)
        elif cls == _JMP32:
            yield nxt, state
            yield nxt + insn.off, state
        elif cls == _JMP:
            yield from self._step_jump(insn, state, nxt)
        else:
            raise BuildError(f"{self.origin}: .text+{insn.pc * 8:#x}: unknown opcode")

    def _step_jump(self, insn: _Insn, state: _State, nxt: int) -> Iterator[tuple[int, _State]]:
        op = insn.op
        if op == _OP_JA:
            yield nxt + insn.off, state
        elif op == _OP_EXIT:
            function = self.function_of[insn.pc]
            if function == self.entry_pc:
                self._read64(insn, state, 0, "the entrypoint's return value")
            else:
                self._returned(function, state[0])
        elif op == _OP_CALL and insn.uses_register:  # callx: target unknown, so nothing tainted
            for register in (insn.dst, 1, 2, 3, 4, 5):
                self._read64(insn, state, register, "callx")
            yield nxt, _clobbered(state, None)
        elif op == _OP_CALL and insn.src == 1:  # local call
            target = nxt + insn.imm
            self.callers.setdefault(target, set()).add(insn.pc)
            self._flow_to(target, state, target)
            yield nxt, _clobbered(state, self.returns_tainted.get(target))
        elif op == _OP_CALL:  # syscall
            for register in range(1, self.syscall_arguments.get(insn.imm & 0xFFFFFFFF, 5) + 1):
                self._read64(insn, state, register, "a syscall argument")
            yield nxt, _clobbered(state, None)
        else:  # a 64-bit conditional jump
            self._read64(insn, state, insn.dst, "a 64-bit comparison")
            if insn.uses_register:
                self._read64(insn, state, insn.src, "a 64-bit comparison")
            yield nxt, state
            yield nxt + insn.off, state

    def run(self) -> None:
        self._flow_to(self.entry_pc, _CLEAN, self.entry_pc)
        while self.work:
            pc = self.work.pop()
            insn = self.insns[pc]
            for successor, state in self._step(insn, self.state[pc]):
                self._flow_to(successor, state, self.function_of[pc])


def _clobbered(state: _State, r0: int | None) -> _State:
    """The registers after a call: r0 the callee's result, r1-r5 undefined, r6-r10 kept."""
    return (r0, None, None, None, None, None, *state[6:])


def check_upper_halves(
    text: bytes, entry_pc: int, syscall_arguments: Mapping[int, int], origin: str
) -> None:
    """Refuse SBPF v3 bytecode that could read a sign-extended upper half as 64 bits.

    Args:
        text: the linked bytecode (local calls resolved, syscalls as static calls).
        entry_pc: the entrypoint's instruction index.
        syscall_arguments: how many argument registers (r1..) each syscall reads, by its
            murmur3 key; a syscall not listed is taken to read all five.
        origin: names the objects in messages.

    Raises:
        SignExtensionError: an instruction reads, as 64 bits, a register whose upper half
            came from ``add32``/``sub32``/``mul32`` on some path; the message names both
            instructions.
    """
    _Flow(text, entry_pc, syscall_arguments, origin).run()
