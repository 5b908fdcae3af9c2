#!/usr/bin/env bash
# Create .venv and install curta-chain with its test tools, at the exact versions in
# constraints.txt. Safe to rerun.
#   --all      also the demo model's training tools (torch and sentencepiece, with the CUDA
#              libraries PyPI's torch loads even on a CPU; which ones:
#              scripts/train_demo_model.requirements.txt), so that the suite runs the
#              training script's test too (what .ci/run does)
#   --no-node  no `npm ci` for the Node suites (scripts/demo.sh needs none of them)
set -euo pipefail
cd "$(dirname "$0")/.."
all=false
node=true
for arg in "$@"; do
    case "$arg" in
        --all) all=true ;;
        --no-node) node=false ;;
        *) echo "setup.sh: unknown option $arg (expected --all or --no-node)" >&2; exit 2 ;;
    esac
done
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -c constraints.txt -e ".[test]"
if $all; then
    # The list pins every package: installed as it stands, without what it leaves out.
    .venv/bin/python -m pip install -q --no-deps -r scripts/train_demo_model.requirements.txt
fi
# The program's build tools are not part of the package: the SBPF linker, a package beside
# the C source (programs/sbpf_linker), and the build script (scripts/build_program.py). A
# path configuration file lets this environment's scripts and tests import them (`from
# sbpf_linker import link`, `from build_program import CFLAGS`) without editing sys.path.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$PWD/programs" "$PWD/scripts" > "$site/curta_chain_build_tools.pth"
# `curta-chain run`'s forward pass: the program's C built for this machine, once, into the
# per-user cache (docs/dependencies.md), so that the first run does not wait for it. Without
# a C compiler this says so, and `run` computes the same tokens in numpy.
.venv/bin/python -m curta_chain.inference.host_build
# The package's bytecode, as a wheel's install writes it: a command then starts without
# compiling its modules (an editable install leaves that to the first run that may write).
.venv/bin/python -m compileall -q curta_chain >/dev/null
# The Node suites pytest drives, where npm is present: the second runtime (tests/litesvm_node:
# npm litesvm 1.5, Agave 4.3), the localnet's JavaScript clients (tests/localnet/js), and the
# TypeScript SDK with its build tools (sdk/js, also the page's). Without Node their tests
# skip saying so; with Node but without these packages they fail (tests/node_packages.py).
if $node && command -v npm >/dev/null; then
    for suite in tests/litesvm_node tests/localnet/js sdk/js; do
        (cd "$suite" && npm ci --no-audit --no-fund --loglevel=error)
    done
elif $node; then
    echo "npm is not installed: the SDK, page and JavaScript-client tests will skip" >&2
fi
