#!/bin/sh
# Builds the GPU binaries on a machine WITHOUT a GPU, and packs everything a GPU machine needs to
# run them into one folder, for a GPU machine that has the CUDA runtime but not this project's
# build dependencies (doctest, CLI11, nlohmann-json, Open MPI) and whose time is scarce: the build
# and the packing happen here, the GPU machine only unpacks and runs (tools/gpu_session.sh).
#
# Usage: tools/gpu_bundle.sh [BUNDLE_DIR]      (default .carry/gpu; git ignores .carry/)
#   ARCH=90a      the CUDA architectures to build for (default 90a: Hopper, with wgmma)
#   DATASETS="multi30k-de-en ptb wikitext-2 samsum"   the datasets of $PILLARS_DATA to copy (the
#                 end-to-end runs and the studies)
#
# The bundle:
#   bin/pillars.xz, bin/pillars_tests.xz   Release, stripped, compressed (~9 MB each)
#   lib/        the shared libraries the binaries need that are neither glibc's, the C++ runtime's
#               nor CUDA's (Open MPI and what it pulls in, liblzma, libgomp): the GPU machine's own
#               CUDA, cuBLAS, cuDNN and NCCL are used
#   data/       the datasets named in DATASETS, with the mirror's README.md and SHA256SUMS
#   MANIFEST    what was built from (commit, dirty files, compiler, CUDA), and the sizes
# The source tree travels beside it (the Python references of tools/bench, the experiments).
set -eu
BUNDLE=${1:-.carry/gpu}
ARCH=${ARCH:-90a}
DATASETS=${DATASETS:-multi30k-de-en ptb wikitext-2 samsum}
BUILD=build-gpu-$ARCH

if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "gpu_bundle: no nvcc (CUDA toolkit) on this machine: the GPU binaries cannot be built here" >&2
  exit 2
fi
echo "gpu_bundle: building $BUILD (CUDA architectures $ARCH), Release"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPILLARS_CUDA_ARCHITECTURES="$ARCH" >"$BUILD/configure.log" 2>&1 ||
  { tail -20 "$BUILD/configure.log"; exit 1; }
grep -q "PILLARS_HAVE_CUDA" "$BUILD/compile_commands.json" ||
  { echo "gpu_bundle: CMake did not enable CUDA (see $BUILD/configure.log)" >&2; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target pillars pillars_tests

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/data"
for b in pillars pillars_tests; do
  strip -o "$BUNDLE/bin/$b" "$BUILD/$b"
  xz -T0 -6 "$BUNDLE/bin/$b"
done

# The non-system libraries: everything ldd resolves except glibc, the compiler's runtime and CUDA's.
ldd "$BUILD/pillars_tests" "$BUILD/pillars" | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
    libcuda.so*|libcudart*|libcublas*|libcudnn*|libnccl*|libnvrtc*|libnvJitLink*) continue ;;
  esac
  cp -L "$lib" "$BUNDLE/lib/"
done

if [ -n "${PILLARS_DATA:-}" ] && [ -d "$PILLARS_DATA" ]; then
  for f in README.md SHA256SUMS; do [ -f "$PILLARS_DATA/$f" ] && cp "$PILLARS_DATA/$f" "$BUNDLE/data/"; done
  for d in $DATASETS; do
    if [ -d "$PILLARS_DATA/$d" ]; then cp -r "$PILLARS_DATA/$d" "$BUNDLE/data/"; else echo "gpu_bundle: $PILLARS_DATA has no $d (skipped)"; fi
  done
else
  echo "gpu_bundle: PILLARS_DATA is not set: no datasets in the bundle (the end-to-end runs will skip)"
fi

{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  git status --short 2>/dev/null | sed 's/^/dirty /'
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) for CUDA architectures $ARCH"
  echo "compiler $(c++ --version | head -1)"
  echo "nvcc $( (/usr/local/cuda/bin/nvcc --version || nvcc --version) 2>/dev/null | tail -1)"
  du -sk "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/data" | awk '{printf "size %s %d KiB\n", $2, $1}'
} >"$BUNDLE/MANIFEST"
cat "$BUNDLE/MANIFEST"
total=$(du -sk "$BUNDLE" | awk '{print $1}')
echo "gpu_bundle: $BUNDLE holds $total KiB; on the GPU machine run: tools/gpu_session.sh $BUNDLE OUT_DIR"
