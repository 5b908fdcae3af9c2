"""The on-chain run: its account, its step schedule, the mirror that checks it, the client.

A run is one generation by the program from a sealed model, a step per transaction. This
package sits above the program's client (``curta_chain.program``) and the cluster client
(``curta_chain.chain``), which never import it: ``run_account`` the run account's bytes,
``schedule`` (with ``cost_formula``) the step schedule's one table that
``programs/curta/schedule.h`` is generated from, ``mirror`` the program's ``step`` in
Python, ``run`` and ``pipeline`` ``run --on-chain`` (open or find a run, crank it), ``runs``
listing and closing run accounts. The off-chain run is ``curta_chain.inference.run``.
"""

# Each job lives in a module named for it, so the package offers its modules
# (tests/test_exports.py checks that the list is complete).
__all__ = ["cost_formula", "mirror", "pipeline", "run", "run_account", "runs", "schedule"]
