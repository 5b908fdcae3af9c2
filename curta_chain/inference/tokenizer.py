"""The tokenizer the artifact carries: encode a prompt and decode ids, from its own bytes.

Encoding is llama2.c's (``run.c``'s ``encode``), with integers where it has floats:

1. the opening token 1;
2. a space prefix and then the text, one lookup per UTF-8 character: a binary search,
   comparing bytes, over the artifact's sorted token ids (equal strings sort by id, so
   the search finds the lowest id); a character with no token becomes its bytes'
   tokens ``byte + 3``;
3. then, over the whole sequence (the opening token included, as llama2.c does), the
   adjacent pair whose concatenated bytes are a token with the highest score key is
   merged, the leftmost among equal keys, until no adjacent pair makes a token.

llama2.c looks up ``" "`` once for the prefix; when a vocabulary has no ``" "`` token
(the 512-token stand-in has none) that lookup fails there, and here the space falls back
to its byte token like any other character. llama2.c only merges pairs scoring above
-1e10 and compares float scores, where this compares the u32 score keys: the same order
for every score a real vocabulary holds (no -0.0, nothing at or below -1e10).

Decoding: a token's bytes, except that the space that opens a token right after token 1
is dropped, and a token that reads ``<0xXX>`` is the one byte 0xXX. Tokens 1 and 2 end
a run and add no text. Unlike llama2.c, unprintable bytes are kept.
"""

import heapq
import re
from bisect import bisect_left
from collections.abc import Iterable

from curta_chain.artifact import Artifact
from curta_chain.errors import PromptError

BOS = 1
"""The opening token."""
EOS = 2
STOP_TOKENS = frozenset({BOS, EOS})
"""A generated token 1 or 2 ends a run."""
BYTE_TOKEN_BASE = 3
"""Token ``byte + 3`` is the single byte ``byte``."""
_BYTE_PIECE = re.compile(rb"<0x([0-9A-Fa-f]{2})>")


class Tokenizer:
    """Encode text to token ids and decode ids to bytes, from an artifact's tokenizer blocks.

    Attributes:
        tokens: each token id's bytes.
        keys: each token id's u32 score key.
    """

    def __init__(self, tokens: tuple[bytes, ...], keys: list[int], sorted_ids: list[int]):
        """Build from the three blocks (use ``from_artifact``)."""
        self.tokens = tokens
        self.keys = keys
        self._sorted_ids = sorted_ids
        self._sorted = [tokens[i] for i in sorted_ids]

    @classmethod
    def from_artifact(cls, artifact: Artifact) -> "Tokenizer":
        """Read the tokenizer entries, sorted ids and token strings of ``artifact``."""
        return cls(
            artifact.tokens(),
            artifact.score_keys().tolist(),
            artifact.sorted_ids().tolist(),
        )

    def lookup(self, piece: bytes) -> int | None:
        """Return the lowest id whose bytes are ``piece``, or None: binary search, bytewise."""
        at = bisect_left(self._sorted, piece)
        if at < len(self._sorted) and self._sorted[at] == piece:
            return self._sorted_ids[at]
        return None

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text``, opening token first.

        An empty text is the opening token alone (llama2.c adds no prefix then).

        Raises:
            PromptError: ``text`` is not valid UTF-8 (a string from undecodable bytes).
        """
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise PromptError(
                f"the prompt is not valid UTF-8 (character {exc.start} cannot be encoded)"
            ) from exc
        ids = [BOS]
        if text:
            for char in " " + text:
                piece = char.encode("utf-8")
                found = self.lookup(piece)
                if found is None:
                    ids.extend(byte + BYTE_TOKEN_BASE for byte in piece)
                else:
                    ids.append(found)
        return self._merge(ids)

    def _merge(self, ids: list[int]) -> list[int]:
        """Merge the best adjacent pair until none makes a token (llama2.c's loop).

        A heap of candidate pairs, keyed by (highest score key, leftmost position), with
        stale entries skipped, picks the same pair as llama2.c's scan of every pair.
        """
        tokens = list(ids)
        count = len(tokens)
        after = list(range(1, count + 1))
        before = list(range(-1, count - 1))
        alive = [True] * count
        heap: list[tuple[int, int, int, int, int]] = []

        def push(left: int) -> None:
            right = after[left]
            if right < count:
                merged = self.lookup(self.tokens[tokens[left]] + self.tokens[tokens[right]])
                if merged is not None:
                    entry = (-self.keys[merged], left, tokens[left], tokens[right], merged)
                    heapq.heappush(heap, entry)

        for position in range(count - 1):
            push(position)
        while heap:
            _, left, left_token, right_token, merged = heapq.heappop(heap)
            right = after[left] if alive[left] else count
            if right >= count or (tokens[left], tokens[right]) != (left_token, right_token):
                continue  # one side has merged since this pair was pushed
            tokens[left] = merged
            alive[right] = False
            after[left] = after[right]
            if after[right] < count:
                before[after[right]] = left
            push(left)
            if before[left] >= 0:
                push(before[left])
        return [token for token, live in zip(tokens, alive, strict=True) if live]

    def piece(self, previous: int, token: int) -> bytes:
        """Return the bytes token ``token`` adds after ``previous`` (empty for 1 and 2)."""
        if token in STOP_TOKENS:
            return b""
        data = self.tokens[token]
        if previous == BOS and data.startswith(b" "):
            data = data[1:]
        byte = _BYTE_PIECE.fullmatch(data)
        if byte:
            return bytes([int(byte.group(1), 16)])
        return data

    def decode(self, ids: Iterable[int], previous: int = BOS) -> bytes:
        """Return the bytes of ``ids`` following ``previous`` (the opening token by default)."""
        out = []
        for token in ids:
            out.append(self.piece(previous, token))
            previous = token
        return b"".join(out)
