"""The forward pass in the on-chain program's own C, compiled for this machine.

``NativeModel`` runs a plan as the program runs it (``programs/curta/host/host_run.c``): a
run account holding the prompt's ids, then the program's phases, the forward pass and the
sampler, each whole. The integers are the program's, which are ``docs/inference.md``'s,
which are the numpy pass's (tests compare them token for token); only the speed differs.

``fastest_model`` is how a caller gets one: the native model when the library builds and
loads (``host_build``), else the numpy ``IntModel``, with one note saying why. The
environment variable ``CURTA_CHAIN_NATIVE=0`` asks for the numpy pass.
"""

import ctypes
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from curta_chain.artifact import Artifact, ModelConfig
from curta_chain.errors import BuildError, PromptError
from curta_chain.inference.forward import check_tokens
from curta_chain.inference.host_build import library
from curta_chain.inference.model import IntModel
from curta_chain.inference.run import RunPlan
from curta_chain.inference.sampling import SamplingSettings
from curta_chain.reporting import Reporter

SWITCH = "CURTA_CHAIN_NATIVE"
"""Set to 0 to run the numpy pass even where the native one builds."""
_FINISHED = 1 << 32
"""curta_host_advance's flag beside the token count: the run has finished."""
_LOCK = threading.Lock()
"""The library's scratch (its heap, the activation pieces) is the process's: a call at a time."""
_LOADED: dict[Path, ctypes.CDLL] = {}


def _load(path: Path) -> ctypes.CDLL:
    """Load the library once per process and declare the functions ``host_run.c`` exports."""
    if path not in _LOADED:
        lib = ctypes.CDLL(str(path))
        lib.curta_host_open.restype = ctypes.c_void_p
        lib.curta_host_open.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint32),
            *[ctypes.c_uint32] * 4,
            ctypes.c_uint64,
        ]
        lib.curta_host_advance.restype = ctypes.c_int64
        lib.curta_host_advance.argtypes = [ctypes.c_void_p]
        lib.curta_host_token.restype = ctypes.c_uint32
        lib.curta_host_token.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.curta_host_close.restype = None
        lib.curta_host_close.argtypes = [ctypes.c_void_p]
        _LOADED[path] = lib
    return _LOADED[path]


@dataclass(eq=False)
class NativeModel:
    """An artifact run by the program's C: ``generate`` as ``inference.generate``.

    Attributes:
        config: the model's shape.
        library: the built library's path.
    """

    config: ModelConfig
    library: Path
    _lib: ctypes.CDLL = field(repr=False)
    _data: bytes = field(repr=False)  # the bytes at _address, kept alive with the model
    _address: int = field(repr=False)

    @classmethod
    def from_artifact(cls, artifact: Artifact, path: Path) -> "NativeModel":
        """Bind a decoded (so checked) artifact to the library at ``path``.

        The program reads the artifact's rows and tables in place, as on chain: CPython
        keeps a ``bytes`` object's data 16-aligned, and the sections start 8-aligned in it.

        Raises:
            BuildError: the library does not load.
        """
        try:
            lib = _load(path)
        except OSError as exc:
            raise BuildError(f"{path}: does not load: {exc}") from exc
        address = ctypes.cast(ctypes.c_char_p(artifact.data), ctypes.c_void_p).value or 0
        if address % 8:
            raise BuildError(f"the artifact's bytes sit at {address:#x}, not 8-aligned")
        return cls(artifact.config, path, lib, artifact.data, address)

    def generate(self, plan: RunPlan, settings: SamplingSettings) -> Iterator[int]:
        """Yield the generated ids one at a time, as ``inference.generate`` does.

        Raises:
            PromptError: the plan's ids or length do not fit the model (the program reads
                what it is given: a plan not made by ``plan_run`` is checked here).
            MemoryError: the run account cannot be allocated.
            RuntimeError: a phase of the program could not run (a guard, not a path).
        """
        lib = self._lib
        capacity = len(plan.prompt_ids) + plan.max_tokens
        check_tokens(self.config, plan.prompt_ids)
        if plan.max_tokens < 1 or capacity > self.config.seq_len:
            raise PromptError(
                f"{plan.max_tokens} new tokens after {len(plan.prompt_ids)}: expected 1 to "
                f"{self.config.seq_len - len(plan.prompt_ids)} (the context)"
            )
        prompt = (ctypes.c_uint32 * len(plan.prompt_ids))(*plan.prompt_ids)
        run = lib.curta_host_open(
            self._address,
            prompt,
            len(plan.prompt_ids),
            capacity,
            settings.temperature,
            settings.top_p,
            settings.seed,
        )
        if not run:
            raise MemoryError(f"a run account for {capacity} tokens")
        try:
            known = len(plan.prompt_ids)
            while True:
                with _LOCK:
                    advanced = lib.curta_host_advance(run)
                    if advanced < 0:
                        raise RuntimeError("a phase of the program could not run")
                    count = advanced & (_FINISHED - 1)
                    new = [lib.curta_host_token(run, i) for i in range(known, count)]
                known = max(count, known)
                yield from new
                if advanced & _FINISHED:  # a stop token, or the plan's last token
                    return
        finally:
            lib.curta_host_close(run)


def fastest_model(
    artifact: Artifact, reporter: Reporter, environ: Mapping[str, str] = os.environ
) -> "NativeModel | IntModel":
    """The native model when its library builds and loads, else the numpy ``IntModel``.

    A build on first use says so first (a few seconds); a model that falls back says why,
    in one note, unless ``CURTA_CHAIN_NATIVE=0`` asked for it.
    """
    if environ.get(SWITCH, "1") != "0":
        try:
            path = library(
                environ, on_build=lambda: reporter.note("building the program's C for this machine")
            )
            return NativeModel.from_artifact(artifact, path)
        except BuildError as exc:
            reporter.note(f"the native forward pass is unavailable: {exc}; running numpy's")
    return IntModel.from_artifact(artifact)
