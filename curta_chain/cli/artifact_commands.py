"""``convert``, ``inspect`` and ``hash``: the artifact subcommands."""

import argparse
from typing import TYPE_CHECKING

from curta_chain.cli.options import add_output_option, emit, make_reporter

if TYPE_CHECKING:  # numpy and the artifact code load when a command runs, not for --help
    from curta_chain.artifact import Artifact
    from curta_chain.reporting import Reporter


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``convert``, ``inspect`` and ``hash``."""
    convert = subparsers.add_parser(
        "convert",
        help="convert a llama2.c checkpoint and tokenizer, or a TEZW v2 file, to an artifact",
        description="Convert a llama2.c checkpoint with its tokenizer file, or a TEZW v2 file "
        "(detected by its TZ2W magic, no tokenizer), into a CURTAW01 artifact.",
    )
    convert.add_argument("input", metavar="INPUT", help="llama2.c checkpoint or TEZW v2 file")
    convert.add_argument(
        "tokenizer", metavar="TOKENIZER", nargs="?", help="llama2.c tokenizer (not for TEZW)"
    )
    convert.add_argument(
        "-o", "--output-file", required=True, metavar="OUT", help="where to write the artifact"
    )
    convert.add_argument(
        "--cut-tokenizer",
        action="store_true",
        help="keep the tokenizer's first entries, as many as the model's vocabulary, when "
        "it holds more (as llama2.c reads it: stories260K with the 32,000-token tokenizer.bin)",
    )
    add_output_option(convert)
    convert.set_defaults(run=_run_convert)

    inspect = subparsers.add_parser(
        "inspect",
        help="show an artifact's config, sections, matrices and hash",
        description="Decode and check a CURTAW01 artifact and show its configuration, "
        "sections, table blocks, matrices and weights hash.",
    )
    inspect.add_argument("artifact", metavar="ARTIFACT", help="a CURTAW01 artifact file")
    add_output_option(inspect)
    inspect.set_defaults(run=_run_inspect)

    hash_ = subparsers.add_parser(
        "hash",
        help="print an artifact's weights hash (hex)",
        description="Print the weights hash of a CURTAW01 artifact: the SHA-256 chain over its "
        "sections' 64 KiB chunks that `seal` recomputes on chain.",
    )
    hash_.add_argument("artifact", metavar="ARTIFACT", help="a CURTAW01 artifact file")
    add_output_option(hash_)
    hash_.set_defaults(run=_run_hash)


def _run_convert(args: argparse.Namespace) -> int:
    from curta_chain.artifact import convert_file, write_artifact

    artifact = convert_file(args.input, args.tokenizer, args.cut_tokenizer)
    write_artifact(artifact, args.output_file)
    if emit(
        args,
        {
            "output_file": str(args.output_file),
            "bytes": len(artifact.data),
            "sections": [len(s) for s in artifact.sections],
            "weights_hash": artifact.weights_hash().hex(),
        },
    ):
        return 0
    out = make_reporter(args)
    lengths = ", ".join(f"{len(s):,}" for s in artifact.sections)
    out.line(f"wrote {args.output_file}: {len(artifact.data):,} bytes")
    out.line(f"sections ({len(artifact.sections)}): {lengths}")
    out.line(f"weights hash: {artifact.weights_hash().hex()}")
    return 0


def _run_inspect(args: argparse.Namespace) -> int:
    from curta_chain.artifact import read_artifact

    artifact = read_artifact(args.artifact)
    if not emit(args, artifact.to_json()):
        _display(artifact, make_reporter(args))
    return 0


def _display(artifact: "Artifact", out: "Reporter") -> None:
    from curta_chain.artifact.layout import BLOCK_NAMES, matrix_name
    from curta_chain.cli.pictures import artifact_bar

    config = artifact.config
    out.line(f"artifact       {artifact.source} ({len(artifact.data):,} bytes, CURTAW01)")
    for name, value in config.to_json().items():
        out.line(f"{name:<14} {value:,}")
    out.line(f"{'head_size':<14} {config.head_size}")
    out.line(f"{'classifier':<14} {'tied to the embedding' if artifact.tied else 'own matrix'}")
    out.line("")
    out.line(f"{'section':>7} {'offset':>12} {'length':>12}")
    offset = 0
    for index, section in enumerate(artifact.sections):
        out.line(f"{index:>7} {offset:>12,} {len(section):>12,}")
        offset += len(section)
    for line in artifact_bar([len(section) for section in artifact.sections]):
        out.line(line)
    out.line("")
    out.line(f"{'block':<28} {'offset':>10}")
    for name, block in zip(BLOCK_NAMES, artifact.blocks, strict=True):
        out.line(f"{name:<28} {block:>10,}")
    out.line("")
    out.line(
        f"{'#':>3} {'matrix':<24} {'section':>7} {'rows':>6} {'cols':>6} {'row B':>6}"
        f" {'offset':>11}"
    )
    for index, m in enumerate(artifact.matrices):
        out.line(
            f"{index:>3} {matrix_name(index):<24} {m.section:>7} {m.rows:>6} {m.columns:>6} "
            f"{m.row_bytes:>6} {m.offset:>11,}"
        )
    out.line("")
    out.line(f"weights hash   {artifact.weights_hash().hex()}")


def _run_hash(args: argparse.Namespace) -> int:
    from curta_chain.artifact import read_artifact

    digest = read_artifact(args.artifact).weights_hash().hex()
    if not emit(args, {"artifact": str(args.artifact), "weights_hash": digest}):
        make_reporter(args).line(digest)
    return 0
