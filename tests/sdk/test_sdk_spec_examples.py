"""The weight format spec's examples (docs/spec/curta-weight-format.md), as written, against
the built SDK imported as ``@curta/sdk``: the weights hash of stories260K, then its
configuration under the spec's names (dim, hiddenDim, layers, heads, kvHeads, vocabSize,
contextLength), its section lengths and its first matrix descriptor. Each must print what
the Python package reads from the same file (whose ModelConfig keeps its own names:
docs/browser.md gives the mapping).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from curta_chain.artifact import Artifact

SPEC = Path(__file__).resolve().parents[2] / "docs" / "spec" / "curta-weight-format.md"

# "The hash", as written in the spec.
HASH_EXAMPLE = """\
import { readFile } from 'node:fs/promises'
import { decodeArtifact, weightsCommitment } from '@curta/sdk'
const artifact = decodeArtifact(new Uint8Array(await readFile('stories260K.curta')))
const hash = await weightsCommitment(artifact.sections)
console.log(Buffer.from(hash).toString('hex'))
"""

# "Read an artifact", as written in the spec (TypeScript: one annotation).
READ_EXAMPLE = """\
import { readFile } from 'node:fs/promises'
import { decodeArtifact } from '@curta/sdk'
const bytes = new Uint8Array(await readFile('stories260K.curta'))
const { config, sections } = decodeArtifact(bytes)
console.log(config) // dim, hiddenDim, layers, heads, kvHeads, vocabSize, contextLength
console.log(sections.map((s) => s.length)) // one length per weight account
// Matrix descriptor i is 24 bytes at 512 + 24 × i of section zero.
const view = new DataView(sections[0].buffer, sections[0].byteOffset)
const matrix = (i: number) => ({
section: view.getUint32(512 + 24 * i, true),
columns: view.getUint32(516 + 24 * i, true),
rows: view.getUint32(520 + 24 * i, true),
rowBytes: view.getUint32(524 + 24 * i, true),
offset: Number(view.getBigUint64(528 + 24 * i, true)),
})
console.log(matrix(0)) // the embedding
"""

SPEC_NAMES = {
    "dim": "dim",
    "hiddenDim": "hidden_dim",
    "layers": "n_layers",
    "heads": "n_heads",
    "kvHeads": "n_kv_heads",
    "vocabSize": "vocab_size",
    "contextLength": "seq_len",
}
"""The spec's (and the SDK's) name of each configuration field -> Python's."""


def run_example(sdk: Path, folder: Path, name: str, source: str) -> list[str]:
    """Compile ``source`` as written (esbuild strips the types), run it in ``folder`` where
    ``@curta/sdk`` is the built SDK; return its printed lines."""
    package = folder / "node_modules" / "@curta" / "sdk"
    if not package.exists():
        package.parent.mkdir(parents=True)
        package.symlink_to(sdk, target_is_directory=True)
    (folder / f"{name}.ts").write_text(source)
    esbuild = sdk / "node_modules" / "esbuild" / "bin" / "esbuild"
    subprocess.run(
        [str(esbuild), f"{name}.ts", "--format=esm", f"--outfile={name}.mjs",
         "--log-level=warning"],
        cwd=folder, check=True, timeout=60,
    )  # fmt: skip
    done = subprocess.run(
        ["node", f"{name}.mjs"], cwd=folder, capture_output=True, text=True, timeout=60,
        env={**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def node_object(text: str) -> dict[str, int]:
    """An object as console.log prints it (``{ dim: 64, hiddenDim: 172 }``), keys in order."""
    body = text.strip().removeprefix("{").removesuffix("}")
    pairs = [item.split(":") for item in body.replace("\n", " ").split(",") if item.strip()]
    return {key.strip(): int(value.strip()) for key, value in pairs}


def test_the_examples_are_the_spec_s_as_written():
    """Each example's lines open the spec's lines, in order (the spec's copy glues the prose
    that follows a code block to its last line)."""
    spec = [line.strip() for line in SPEC.read_text().splitlines()]
    for example in (HASH_EXAMPLE, READ_EXAMPLE):
        at = 0
        for line in example.splitlines():
            found = [i for i in range(at, len(spec)) if spec[i].startswith(line.strip())]
            assert found, f"not in {SPEC.name} after its line {at}: {line}"
            at = found[0] + 1


@pytest.fixture
def example_folder(tmp_path, stories260k: Artifact) -> Path:
    (tmp_path / "stories260K.curta").write_bytes(stories260k.data)
    return tmp_path


def test_the_spec_s_hash_example_prints_the_weights_hash(sdk, example_folder, stories260k):
    lines = run_example(sdk, example_folder, "hash", HASH_EXAMPLE)
    assert lines == [stories260k.weights_hash().hex()]


def test_the_spec_s_read_example_prints_the_spec_s_names(sdk, example_folder, stories260k):
    out = "\n".join(run_example(sdk, example_folder, "read", READ_EXAMPLE))
    config_text, rest = out.split("}", 1)
    config = node_object(config_text + "}")
    assert list(config) == list(SPEC_NAMES)  # the spec's names, in the spec's order
    python = stories260k.config
    assert config == {spec: getattr(python, name) for spec, name in SPEC_NAMES.items()}
    lengths_text, matrix_text = rest.split("]", 1)
    assert json.loads(lengths_text.strip() + "]") == [len(s) for s in stories260k.sections]
    m = stories260k.matrices[0]
    assert node_object(matrix_text) == {
        "section": m.section, "columns": m.columns, "rows": m.rows,
        "rowBytes": m.row_bytes, "offset": m.offset,
    }  # fmt: skip
