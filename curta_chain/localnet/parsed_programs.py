"""The programs ``jsonParsed`` knows, and what its parsers share.

The accounts' parsers (``parsed``, ``parsed_tokens``) and the instructions' parser
(``parsed_instructions``) tell programs by these ids; a parser that cannot read an account
raises ``NotParsable`` (the caller answers base64, as the validator does).
"""

from collections.abc import Callable
from typing import Any

from solders.pubkey import Pubkey

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
SYSVAR_OWNER = Pubkey.from_string("Sysvar1111111111111111111111111111111111111")
TOKEN_PROGRAM = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
TOKEN_2022_PROGRAM = Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
TOKEN_PROGRAMS = {TOKEN_PROGRAM: "spl-token", TOKEN_2022_PROGRAM: "spl-token-2022"}
ASSOCIATED_TOKEN_PROGRAM = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
MEMO_PROGRAMS = (
    Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"),
    Pubkey.from_string("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"),
)
LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")

AccountReader = Callable[[Pubkey], Any]
"""Returns an account (``.owner``, ``.data``) or None; used to find a mint's decimals."""


class NotParsable(ValueError):
    """No parser accepts this account."""
