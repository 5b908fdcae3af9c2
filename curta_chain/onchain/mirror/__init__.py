"""The program's ``step``, in Python: what a run account holds after every step.

``RunMirror`` holds the bytes it expects a run account to hold and computes the next step
the way ``programs/curta/src/step.c`` does: the same phases in the same order, the same
slices, cut by the same cost model, writing the same regions. The schedule (phases, costs,
the phase-to-section rule, the section limit) is the one table of
``curta_chain.onchain.schedule``, which the C's ``schedule.h`` is generated from; the
arithmetic is the off-chain integer core's (``curta_chain.inference``: ``docs/inference.md``),
applied to the row ranges, heads and ids a step covers, so the program is checked against
it, not against a copy of itself. ``compare`` and ``observe`` name the first byte where the
chain differs: the position, the phase and the region.

The modules are split as the C is: ``machine`` (the ``Step`` a step works with), ``step``
(its loop), ``forward``, ``attention``, ``sampling`` and ``tokenizer`` (the phases), and
``mirror`` (``RunMirror``).
"""

from curta_chain.onchain.mirror.machine import Logged, phase_name
from curta_chain.onchain.mirror.mirror import RunMirror, StepPlan, describe_offset

__all__ = ["Logged", "RunMirror", "StepPlan", "describe_offset", "phase_name"]
