"""Read a model's artifact back from the chain, to run it.

Only a sealed model whose weight accounts hash to its declared hash is handed out, unless
the caller accepts an unsealed one (an upload in progress, or a failed seal).
"""

from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact, decode_artifact, weights_hash
from curta_chain.chain.accounts import read_bound_sections, require_model
from curta_chain.chain.rpc import RpcClient
from curta_chain.errors import AccountError
from curta_chain.program import ModelState


async def fetch_artifact(
    client: RpcClient, program_id: Pubkey, address: Pubkey, allow_unsealed: bool = False
) -> Artifact:
    """Return the artifact the model at ``address`` holds, decoded from its weight accounts.

    Args:
        client: the node to read from.
        program_id: the curta program that owns the model.
        address: the model account.
        allow_unsealed: accept a model that is not sealed (its bytes are then not
            checked against the declared hash, only decoded).

    Raises:
        AccountError: no curta model there, not sealed (unless allowed), a section
            unbound or bound elsewhere, or a sealed model whose bytes do not hash to
            its declared hash.
        ArtifactError: the bytes are not a valid artifact.
    """
    model = await require_model(client, program_id, address)
    sealed = model.state == ModelState.SEALED
    if not sealed and not allow_unsealed:
        raise AccountError(
            f"model {address} is {model.state.name.lower()}, not sealed: only a sealed "
            "model runs (--allow-unsealed to try it anyway)"
        )
    sections = await read_bound_sections(client, program_id, address, model)
    if sealed:
        chain_hash = weights_hash(sections)
        if chain_hash != model.declared_hash:
            raise AccountError(
                f"model {address}: its weight accounts hash to {chain_hash.hex()}, but it "
                f"declares {model.declared_hash.hex()}"
            )
    return decode_artifact(b"".join(sections), source=f"model {address}")
