"""The seal's mirror: every step of the seal computed here, what the model must hold after each.

``seal`` reads every section once when it begins and hashes the chunks itself
(``artifact.hash_steps``); ``SealMirror.check`` compares each state of the model account it
sees (the chunk count, running hash, state and cursor) with its own after that many steps,
and names the section and byte range after which they differ.
"""

from dataclasses import dataclass

from curta_chain.artifact import INITIAL_HASH, HashStep
from curta_chain.errors import MirrorMismatchError
from curta_chain.program import ModelAccount, ModelState


@dataclass(frozen=True)
class SealMirror:
    """Every step of the seal, computed here: what the model must hold after each one.

    ``check`` compares the model account with the mirror after ``model.chunks_hashed``
    steps: the chunk count the caller expects (``done``, when given), the running hash, the
    state, and the cursor (where the next chunk starts).
    """

    steps: list[HashStep]

    def check(self, model: ModelAccount, done: int | None = None) -> None:
        """Raise unless the model is exactly where the mirror is after ``done`` steps.

        ``done`` defaults to the model's own count (a seal resuming from the chain).

        Raises:
            MirrorMismatchError: the chunk count, running hash, state or cursor differs;
                the message names the section and byte range after which it differs.
        """
        steps = self.steps
        done = model.chunks_hashed if done is None else done
        if model.chunks_hashed != done or done > len(steps):
            raise MirrorMismatchError(
                f"the model has hashed {model.chunks_hashed} chunks; the mirror expected "
                f"{min(done, len(steps))}"
            )
        running = steps[done - 1].running if done else INITIAL_HASH
        where = f"after {_describe(steps[done - 1])}" if done else "before the first chunk"
        if model.running_hash != running:
            raise MirrorMismatchError(
                f"running hash {where} is {model.running_hash.hex()} on chain, "
                f"{running.hex()} in the mirror"
            )
        if done < len(steps):
            if model.state != ModelState.SEALING:
                raise MirrorMismatchError(
                    f"the model is {model.state.name.lower()} {where}; "
                    f"{len(steps) - done} chunks remain"
                )
            nxt = steps[done]
            if (model.cursor_section, model.cursor_offset) != (nxt.section, nxt.offset):
                raise MirrorMismatchError(
                    f"{where} the chain's cursor is section {model.cursor_section} offset "
                    f"{model.cursor_offset}; the mirror's is section {nxt.section} "
                    f"offset {nxt.offset}"
                )
            return
        final = ModelState.SEALED if running == model.declared_hash else ModelState.FAILED
        if model.state != final:
            raise MirrorMismatchError(
                f"after the last chunk the model is {model.state.name.lower()}; "
                f"the mirror says {final.name.lower()}"
            )


def _describe(step: HashStep) -> str:
    return f"section {step.section} bytes {step.offset}..{step.offset + step.length}"
