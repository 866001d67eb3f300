#!/usr/bin/env bash
# Build (or reuse) ggml's own C code as a test peer: the llama.cpp tree vendored
# in the PyPI sdist llama-cpp-python==0.3.36 (pinned by SHA-256), its static
# library ggml-base, and the JSON-lines adapter conform/peers/ggml_peer.cpp
# linked against it.
#
# Usage: scripts/ggml.sh [--tools | --lib | --shared]
#
#   (no option)  print the adapter binary's absolute path
#   --lib        print two lines instead: the path of libggml-base.a, and the ggml folder of
#                the llama.cpp tree it was built from (include/ and src/ are in it); for
#                linking ggml's own code into the fuzz targets (fuzz/run.sh)
#   --shared     also build ggml-base as a shared library (a third build dir, the same
#                flags but BUILD_SHARED_LIBS=ON; seconds) and print its path: gguf-py's
#                tests/test_quants.py loads it through ctypes (python/tests/intree)
#   --tools      also configure a second build dir with
#                -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=ON and build
#                llama-gguf-split, llama-gguf-hash, llama-quantize and llama-imatrix (they
#                need libllama and llama-common: minutes, not seconds); print the
#                directory that holds them instead
#
# Environment:
#   GGUFRW_GGML_DIR   cache directory
#                     (default: $HOME/.cache/ggufrw/ggml-llama-cpp-python-0.3.36)
#   PYTHON            interpreter used to create the build venv (default: python3)
#   CXX               C++ compiler for the adapter (default: c++)
#   GGUFRW_GGML_JOBS  parallel build jobs (default: ninja's choice)
#
# Output: one line on stdout (the adapter's path, or with --tools the tools'
# directory). Everything else goes to stderr. Exits non-zero on failure.
# The venv holds only the PyPI wheels cmake, ninja and scikit-build-core (the
# last one is needed by `pip download` to read the sdist's metadata); nothing
# is built from source except ggml. Work is done only when something is
# missing; concurrent runs are serialised with flock(1) on "$GGUFRW_GGML_DIR.lock".
# Builds run under `nice -n 10`. See conform/peers/README.md ("ggml peer").
set -euo pipefail

SDIST_NAME="llama-cpp-python"
SDIST_VERSION="0.3.36"
SDIST_FILE="llama_cpp_python-${SDIST_VERSION}.tar.gz"
# sha256 of the sdist as published on PyPI
SDIST_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# llama.cpp commit vendored in that sdist; the sdist records it in
# .git/modules/vendor/llama.cpp/HEAD (the submodule's git dir), checked below.
LLAMA_CPP_COMMIT="0c1e57098bba43ac29e6e3b677cdceebdd22334f"
# build tools, as wheels only (--only-binary): nothing compiled from source
TOOL_WHEELS=("cmake==4.4.5" "ninja==1.13.2" "scikit-build-core==1.1.2")
# a portable static build of ggml-base only (no native CPU flags, no OpenMP, no tests)
CMAKE_FLAGS=(
    -G Ninja
    -DCMAKE_BUILD_TYPE=Release
    -DGGML_NATIVE=OFF
    -DGGML_BACKEND_DL=OFF
    -DBUILD_SHARED_LIBS=OFF
    -DGGML_OPENMP=OFF
    -DLLAMA_BUILD_TESTS=OFF
    -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_TOOLS=OFF
    -DLLAMA_BUILD_SERVER=OFF
    -DLLAMA_CURL=OFF
    -DLLAMA_OPENSSL=OFF
)
TOOLS_FLAGS=(-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=ON)
# llama-imatrix: the importance matrices the quantize tests use, and the reference for
# `ggufrw imatrix convert` (tests/imatrix.rs); llama-export-lora: the merge `ggufrw export-lora`
# is compared with
TOOLS_TARGETS=(llama-gguf-split llama-gguf-hash llama-quantize llama-imatrix llama-export-lora)

. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
with_tools=0
print_lib=0
with_shared=0
parse_args "scripts/ggml.sh [--tools | --lib | --shared]" 36 --tools=with_tools --lib=print_lib --shared=with_shared -- "$@"

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
adapter_src="$here/../conform/peers/ggml_peer.cpp"
[ -f "$adapter_src" ] || die "adapter source not found: $adapter_src"
adapter_src="$(cd -- "$(dirname -- "$adapter_src")" && pwd)/ggml_peer.cpp"

dir="${GGUFRW_GGML_DIR:-${HOME:?HOME is not set}/.cache/ggufrw/ggml-${SDIST_NAME}-${SDIST_VERSION}}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
venv="$dir/venv"
py="$venv/bin/python"
sdist="$dir/sdist/$SDIST_FILE"
src_root="$dir/src/llama_cpp_python-${SDIST_VERSION}"
src="$src_root/vendor/llama.cpp"
build="$dir/build"
build_tools="$dir/build-tools"
build_shared="$dir/build-shared"
lib="$build/ggml/src/libggml-base.a"
shared_lib="$build_shared/bin/libggml-base.so"
cxx="${CXX:-c++}"
base_python="${PYTHON:-python3}"
jobs=()
[ -n "${GGUFRW_GGML_JOBS:-}" ] && jobs=(-j "$GGUFRW_GGML_JOBS")

# stdout is reserved for the final line: send everything else to stderr.
exec 3>&1 1>&2

sha256_of() { sha256sum -- "$1" | cut -d' ' -f1; }
command -v sha256sum >/dev/null 2>&1 || die "sha256sum not found (coreutils)"

# stamps: each step writes one after it succeeded, holding what it was made from
flags_id="$(printf '%s\n' "$SDIST_SHA256" "${CMAKE_FLAGS[@]}" | sha256sum | cut -c1-16)"
# the configured tree depends on the flags only: adding a target builds it in the same tree
tools_configure_id="$(printf '%s\n' "$flags_id" "${TOOLS_FLAGS[@]}" | sha256sum | cut -c1-16)"
tools_id="$(printf '%s\n' "$tools_configure_id" "${TOOLS_TARGETS[@]}" | sha256sum | cut -c1-16)"
shared_id="$(printf '%s\n' "$flags_id" shared | sha256sum | cut -c1-16)"
# the adapter binary is named by the hash of its source (and of the library
# build), so an edited ggml_peer.cpp - or another work tree's version of it -
# always gets its own, freshly compiled binary
adapter_id="$( { sha256_of "$adapter_src"; echo "$flags_id" "$cxx"; } | sha256sum | cut -c1-16)"
adapter_bin="$dir/bin/ggml_peer-$adapter_id"

stamp_is() { [ -f "$1" ] && [ "$(cat -- "$1" 2>/dev/null)" = "$2" ]; }
have_venv()    { [ -x "$py" ] && stamp_is "$dir/.stamp-venv" "${TOOL_WHEELS[*]}"; }
have_sdist()   { [ -f "$sdist" ] && stamp_is "$dir/.stamp-sdist" "$SDIST_SHA256"; }
have_src()     { [ -d "$src/ggml" ] && stamp_is "$dir/.stamp-src" "$SDIST_SHA256"; }
have_lib()     { [ -f "$lib" ] && stamp_is "$dir/.stamp-lib" "$flags_id"; }
have_adapter() { [ -x "$adapter_bin" ] && [ ! "$adapter_src" -nt "$adapter_bin" ] && [ ! "$lib" -nt "$adapter_bin" ]; }
# llama.cpp's own type choice (llama_quant_compute_types), for the quantize plan's tests
types_src="$(dirname -- "$adapter_src")/llama_quant_types.cpp"
types_bin="$build_tools/bin/llama-quant-types"
have_types() { [ -x "$types_bin" ] && [ ! "$types_src" -nt "$types_bin" ] && [ ! "$build_tools/src/libllama.a" -nt "$types_bin" ]; }
have_tools() {
    stamp_is "$dir/.stamp-tools" "$tools_id" || return 1
    local t
    for t in "${TOOLS_TARGETS[@]}"; do [ -x "$build_tools/bin/$t" ] || return 1; done
    have_types
}
have_shared() { [ -f "$shared_lib" ] && stamp_is "$dir/.stamp-shared" "$shared_id"; }
ready() {
    have_lib && have_src && have_adapter && [ -f "$dir/BUILD-INFO" ] \
        && { [ "$with_tools" = 0 ] || have_tools; } \
        && { [ "$with_shared" = 0 ] || have_shared; }
}

make_venv() {
    if [ ! -x "$py" ] || ! "$py" -c 'import sys' >/dev/null 2>&1; then
        command -v "$base_python" >/dev/null 2>&1 || die "$base_python not found"
        rm -rf -- "$venv" || die "cannot remove broken venv $venv"
        "$base_python" -m venv "$venv" \
            || die "'$base_python -m venv $venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
    fi
    "$py" -m pip install --quiet --disable-pip-version-check --no-input \
        --only-binary :all: "${TOOL_WHEELS[@]}" \
        || die "pip install ${TOOL_WHEELS[*]} (wheels only) failed"
    [ -x "$venv/bin/cmake" ] && [ -x "$venv/bin/ninja" ] || die "cmake/ninja missing from $venv/bin after install"
    echo "${TOOL_WHEELS[*]}" >"$dir/.stamp-venv"
}

get_sdist() {
    local tmp="$dir/sdist.tmp-$$"
    rm -rf -- "$tmp"; mkdir -p -- "$tmp" "$dir/sdist"
    note "downloading ${SDIST_NAME}==${SDIST_VERSION} (sdist, ~77 MB)"
    # --no-build-isolation: pip reads the sdist's metadata with the venv's
    # scikit-build-core instead of building an isolated env (which would
    # compile CMake from source)
    "$py" -m pip download --quiet --disable-pip-version-check --no-input \
        --no-deps --no-binary :all: --no-build-isolation \
        "${SDIST_NAME}==${SDIST_VERSION}" -d "$tmp" \
        || { rm -rf -- "$tmp"; die "pip download ${SDIST_NAME}==${SDIST_VERSION} failed"; }
    [ -f "$tmp/$SDIST_FILE" ] || { rm -rf -- "$tmp"; die "pip download did not produce $SDIST_FILE"; }
    local got
    got="$(sha256_of "$tmp/$SDIST_FILE")"
    if [ "$got" != "$SDIST_SHA256" ]; then
        rm -rf -- "$tmp"
        die "SHA-256 mismatch for $SDIST_FILE: got $got, expected $SDIST_SHA256"
    fi
    mv -f -- "$tmp/$SDIST_FILE" "$sdist"
    rm -rf -- "$tmp"
    echo "$SDIST_SHA256" >"$dir/.stamp-sdist"
}

unpack_src() {
    local got tmp="$dir/src.tmp-$$"
    got="$(sha256_of "$sdist")"
    [ "$got" = "$SDIST_SHA256" ] || die "SHA-256 mismatch for cached $sdist: got $got (remove it and retry)"
    rm -rf -- "$tmp" "$dir/src"; mkdir -p -- "$tmp"
    note "unpacking $SDIST_FILE"
    tar -xzf "$sdist" -C "$tmp" || { rm -rf -- "$tmp"; die "cannot untar $sdist"; }
    [ -d "$tmp/llama_cpp_python-${SDIST_VERSION}/vendor/llama.cpp/ggml" ] \
        || { rm -rf -- "$tmp"; die "$SDIST_FILE has no vendor/llama.cpp/ggml"; }
    mv -- "$tmp" "$dir/src"
    echo "$SDIST_SHA256" >"$dir/.stamp-src"
}

check_commit() {
    local head="$src_root/.git/modules/vendor/llama.cpp/HEAD" got
    [ -f "$head" ] || die "the sdist does not record the vendored llama.cpp commit ($head missing)"
    got="$(tr -d '[:space:]' <"$head")"
    [ "$got" = "$LLAMA_CPP_COMMIT" ] || die "vendored llama.cpp is at $got, expected $LLAMA_CPP_COMMIT"
}

ggml_version() {
    local f="$src/ggml/CMakeLists.txt" maj min pat
    maj="$(sed -n 's/^set(GGML_VERSION_MAJOR \([0-9]*\)).*/\1/p' "$f")"
    min="$(sed -n 's/^set(GGML_VERSION_MINOR \([0-9]*\)).*/\1/p' "$f")"
    pat="$(sed -n 's/^set(GGML_VERSION_PATCH \([0-9]*\)).*/\1/p' "$f")"
    echo "${maj:-?}.${min:-?}.${pat:-?}"
}

write_build_info() {
    {
        echo "sdist ${SDIST_NAME}==${SDIST_VERSION} ($SDIST_FILE)"
        echo "sdist_sha256 $SDIST_SHA256"
        echo "llama_cpp_commit $LLAMA_CPP_COMMIT (from .git/modules/vendor/llama.cpp/HEAD in the sdist)"
        echo "ggml_version $(ggml_version)"
        echo "tool_wheels ${TOOL_WHEELS[*]}"
        echo "cmake_flags ${CMAKE_FLAGS[*]}"
        echo "library $lib"
        echo "cxx $("$cxx" --version 2>/dev/null | head -n1)"
    } >"$dir/BUILD-INFO.tmp" && mv -f -- "$dir/BUILD-INFO.tmp" "$dir/BUILD-INFO"
}

cmake_env() { PATH="$venv/bin:$PATH" nice -n 10 "$@"; }

build_lib() {
    if [ ! -f "$build/build.ninja" ] || ! stamp_is "$dir/.stamp-configure" "$flags_id"; then
        rm -rf -- "$build" "$dir/.stamp-configure"
        note "configuring vendor/llama.cpp in $build"
        cmake_env "$venv/bin/cmake" -S "$src" -B "$build" "${CMAKE_FLAGS[@]}" \
            -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" >"$dir/configure.log" 2>&1 \
            || { tail -n 30 "$dir/configure.log" >&2; die "cmake configure failed (log: $dir/configure.log)"; }
        echo "$flags_id" >"$dir/.stamp-configure"
    fi
    note "building ggml-base"
    cmake_env "$venv/bin/cmake" --build "$build" --target ggml-base "${jobs[@]}" >"$dir/build.log" 2>&1 \
        || { tail -n 30 "$dir/build.log" >&2; die "building ggml-base failed (log: $dir/build.log)"; }
    [ -f "$lib" ] || die "build finished but $lib is missing"
    echo "$flags_id" >"$dir/.stamp-lib"
}

build_adapter() {
    command -v "$cxx" >/dev/null 2>&1 || die "C++ compiler '$cxx' not found (apt-get install g++, or set CXX)"
    [ -f "$src/vendor/nlohmann/json.hpp" ] || die "the llama.cpp tree has no vendor/nlohmann/json.hpp"
    mkdir -p -- "$dir/bin"
    local tmp="$adapter_bin.tmp-$$"
    note "compiling $(basename -- "$adapter_src") -> $adapter_bin"
    # ggml/src for the internal ggml-quants.h (dequantize_row_q8_K,
    # quantize_row_q8_K_ref); vendor/ for <nlohmann/json.hpp>
    if ! nice -n 10 "$cxx" -std=c++17 -O2 -Wall -Wextra \
            -I"$src/ggml/include" -I"$src/ggml/src" -I"$src/vendor" \
            -o "$tmp" "$adapter_src" "$lib" -lpthread -lm; then
        rm -f -- "$tmp"
        die "compiling $adapter_src failed"
    fi
    mv -f -- "$tmp" "$adapter_bin"
}

build_shared() {
    rm -rf -- "$build_shared" "$dir/.stamp-shared"
    note "configuring and building ggml-base as a shared library in $build_shared"
    cmake_env "$venv/bin/cmake" -S "$src" -B "$build_shared" "${CMAKE_FLAGS[@]}" -DBUILD_SHARED_LIBS=ON \
        -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" >"$dir/configure-shared.log" 2>&1 \
        || { tail -n 30 "$dir/configure-shared.log" >&2; die "cmake configure (shared) failed (log: $dir/configure-shared.log)"; }
    cmake_env "$venv/bin/cmake" --build "$build_shared" --target ggml-base "${jobs[@]}" >"$dir/build-shared.log" 2>&1 \
        || { tail -n 30 "$dir/build-shared.log" >&2; die "building the shared ggml-base failed (log: $dir/build-shared.log)"; }
    [ -f "$shared_lib" ] || die "build finished but $shared_lib is missing"
    echo "$shared_id" >"$dir/.stamp-shared"
}

build_tools() {
    if [ ! -f "$build_tools/build.ninja" ] || ! stamp_is "$dir/.stamp-tools-configure" "$tools_configure_id"; then
        rm -rf -- "$build_tools" "$dir/.stamp-tools-configure"
        note "configuring vendor/llama.cpp with tools in $build_tools"
        cmake_env "$venv/bin/cmake" -S "$src" -B "$build_tools" "${CMAKE_FLAGS[@]}" "${TOOLS_FLAGS[@]}" \
            -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" >"$dir/configure-tools.log" 2>&1 \
            || { tail -n 30 "$dir/configure-tools.log" >&2; die "cmake configure with tools failed (log: $dir/configure-tools.log)"; }
        echo "$tools_configure_id" >"$dir/.stamp-tools-configure"
    fi
    note "building ${TOOLS_TARGETS[*]} (links libllama and llama-common: takes minutes)"
    cmake_env "$venv/bin/cmake" --build "$build_tools" --target "${TOOLS_TARGETS[@]}" "${jobs[@]}" \
        >"$dir/build-tools.log" 2>&1 \
        || { tail -n 30 "$dir/build-tools.log" >&2; die "building ${TOOLS_TARGETS[*]} failed (log: $dir/build-tools.log)"; }
    local t
    for t in "${TOOLS_TARGETS[@]}"; do
        [ -x "$build_tools/bin/$t" ] || die "build finished but $build_tools/bin/$t is missing"
    done
    note "compiling $(basename -- "$types_src") -> $types_bin"
    local b="$build_tools"
    nice -n 10 "$cxx" -std=c++17 -O1 -I"$src/include" -I"$src/src" -I"$src/ggml/include" \
        -o "$types_bin.tmp" "$types_src" "$b/src/libllama.a" "$b/ggml/src/libggml.a" \
        "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" -lpthread -ldl -lm \
        || die "compiling $types_src failed"
    mv -f -- "$types_bin.tmp" "$types_bin"
    echo "$tools_id" >"$dir/.stamp-tools"
}

if ! ready; then
    mkdir -p -- "$dir" || die "cannot create $dir"
    if take_lock "$dir"; then
        # leftovers of an interrupted run (all work happens under this lock)
        rm -rf -- "$dir"/sdist.tmp-* "$dir"/src.tmp-* "$dir"/bin/*.tmp-* 2>/dev/null || true
    fi
    # re-check: another run may have finished the job while we waited
    if ! ready; then
        if ! have_lib || ! have_src; then
            have_src || { have_sdist || { have_venv || make_venv; get_sdist; }; unpack_src; }
            check_commit
            have_lib || { have_venv || make_venv; build_lib; }
        fi
        check_commit
        [ -f "$dir/BUILD-INFO" ] || write_build_info
        have_adapter || build_adapter
        if [ "$with_tools" = 1 ] && ! have_tools; then
            have_venv || make_venv
            build_tools
        fi
        if [ "$with_shared" = 1 ] && ! have_shared; then
            have_venv || make_venv
            build_shared
        fi
    fi
fi

if [ "$print_lib" = 1 ]; then
    printf '%s\n%s\n' "$lib" "$src/ggml" >&3
elif [ "$with_shared" = 1 ]; then
    echo "$shared_lib" >&3
elif [ "$with_tools" = 1 ]; then
    echo "$build_tools/bin" >&3
else
    echo "$adapter_bin" >&3
fi
