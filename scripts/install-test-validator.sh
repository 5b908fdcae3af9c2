#!/usr/bin/env bash
# Build the real solana-test-validator from the agave-validator crate, pinned, into a
# per-user folder outside any checkout: ${XDG_DATA_HOME:-~/.local/share}/curta-chain/agave/
# <version>/bin. `curta-chain localnet --validator` and the validator test tier look there
# (curta_chain/validator.py), so a clone in another folder (CI's) finds the same binary.
# Slow: on two cores expect over an hour (rocksdb is C++). Run it once, in the background:
#   nohup bash scripts/install-test-validator.sh > /tmp/agave-build.log 2>&1 &
set -euo pipefail
# 4.2.2, not 4.3.x: from 4.3.0 on, the published solana-ledger calls methods that exist
# only in agave's fork of rust-rocksdb (new_pinnable_slice, get_pinned_cf_into,
# DBPinnableSlice::reset, write(&mut batch)), which agave's workspace swaps in with
# [patch.crates-io]; `cargo install` from the registry cannot apply a workspace's patches,
# so 4.3.2 fails in solana-ledger with E0599/E0308 (tried here). 4.2.2's solana-ledger uses
# only rocksdb 0.24's own API.
version="${AGAVE_VERSION:-4.2.2}"
# rustup brings this toolchain when stable is older (agave 4.3 declares 1.97.1; 4.2 less).
toolchain="${AGAVE_TOOLCHAIN:-1.97.1}"
root="${XDG_DATA_HOME:-$HOME/.local/share}/curta-chain/agave/$version"
if [[ -x "$root/bin/solana-test-validator" ]]; then
    echo "solana-test-validator $version is already installed: $root/bin/solana-test-validator"
    exit 0
fi
# What the build links and generates with: libudev (hidapi, the ledger wallet), libclang
# (bindgen for rocksdb and zstd), protoc (the gRPC and storage protobufs), OpenSSL headers.
need=()
for pkg in pkg-config libudev-dev clang libclang-dev protobuf-compiler libssl-dev cmake make g++; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
rustup toolchain list | grep -q "^$toolchain" || rustup toolchain install "$toolchain" --profile minimal
start=$(date +%s)
# A private target folder: the build's objects are removed once the binary is in place.
# AGAVE_BUILD_DIR reuses a failed build's folder (what it compiled, rocksdb's C++ above all,
# is not compiled again).
target="${AGAVE_BUILD_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/agave-build.XXXXXX")}"
CARGO_TARGET_DIR="$target" cargo "+$toolchain" install agave-validator \
    --version "=$version" --locked --bin solana-test-validator --root "$root.partial"
mv "$root.partial" "$root"
du -sh "$target" | sed 's/^/build folder: /'
rm -rf "$target"
echo "built solana-test-validator $version in $(( $(date +%s) - start )) s: $root/bin/solana-test-validator"
du -sh "$root" | sed 's/^/installed: /'
