#!/usr/bin/env bash
# FlashInfer's GDN prefill for the device machine (issue 21's A/B rows: `compare delta-rule --rules ...,flashinfer`),
# packed here, where pip reaches PyPI, into two carry folders of the checkout (.fi_a, .fi_b: each under what one call
# carries beside the tree; .gitignore'd by /.fi_*/ in .git/info/exclude). On the device, docs/results/device_call.sh's
# `fi_site` joins and unpacks them into /tmp/fisite once both have come (two calls on one warm machine).
# What goes in (Python 3.12, x86-64, the device's torch 2.11 + CUDA 13): flashinfer-python 0.7.4 (its SM90 GDN prefill is
# a CuTe DSL kernel: Python, compiled on first use), nvidia-cutlass-dsl 4.8.1 with its CUDA 13 libraries (the MLIR
# compiler, 191 MB of the 370), cuda-bindings, cuda-pathfinder, cuda-tile, protobuf, tabulate, nvidia-ml-py. Not
# apache-tvm-ffi: FlashQLA's site (.qla) has 0.1.12, which flashinfer accepts (>= 0.1.11, < 0.2), so both load in one
# process with one copy. Left out of flashinfer: its C++/CUDA sources and headers (data/, the Cake and MoE kernel
# sources, experimental/): the SM90 GDN path compiles none of them (`import flashinfer.gdn_prefill` checked on this
# CPU with the same files for Python 3.11).
# Run from the checkout's root: bash docs/results/2026-12-08-s53-cpu/flashinfer_site.sh   (~6 min; ~80 MB in two parts)
set -eu
W=$(mktemp -d); S=$W/site
py=(--no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
    --platform manylinux_2_24_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any)
python3 -m pip download -q "${py[@]}" -d "$W/whl" flashinfer-python==0.7.4 nvidia-cutlass-dsl==4.8.1 \
    nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 \
    cuda-bindings==13.5.0 cuda-pathfinder==1.9.1 cuda-tile==1.7.0 protobuf==7.36.2 tabulate==0.10.0 nvidia-ml-py==13.615.71
python3 -m pip install -q --no-index --no-compile "${py[@]}" --target "$S" "$W"/whl/*.whl
(cd "$S" && rm -rf flashinfer/data flashinfer/experimental/cake flashinfer/experimental/b12x \
    flashinfer/experimental/qwen_3_5_block flashinfer/moe_ep/kernel_src flashinfer/cake_*_backend/csrc b12x bin \
    cutile_cache example.py build_backend.py build_utils.py &&
 find flashinfer/fused_moe/backends -type f \( -name "*.cu" -o -name "*.cuh" -o -name "*.cpp" \) -delete &&
 find . -name __pycache__ -prune -exec rm -rf {} +)
tar -C "$S" -cf - . | xz -T2 -9e > "$W/fisite.tar.xz"
rm -rf .fi_a .fi_b; mkdir -p .fi_a .fi_b
half=$(( ($(stat -c %s "$W/fisite.tar.xz") + 1) / 2 ))
split -b "$half" -d "$W/fisite.tar.xz" "$W/part."
mv "$W/part.00" .fi_a/; mv "$W/part.01" .fi_b/
sha256sum "$W/fisite.tar.xz" | cut -d' ' -f1 > .fi_b/fisite.sha256
grep -qx '/.fi_\*/' .git/info/exclude || echo '/.fi_*/' >> .git/info/exclude
du -sb .fi_a .fi_b; rm -rf "$W"
