#!/usr/bin/env bash
# Installs the Debian packages shardscope builds with. Idempotent; needs root (or sudo).
#   scripts/setup.sh            build + test dependencies (oneTBB: libtbb-dev, for sweeps)
#   scripts/setup.sh --viewer   also the viewer's: Dear ImGui 1.86 (with its GLFW/OpenGL3 backends),
#                               GLFW, OpenGL, stb (PNG), Xvfb + xauth + Mesa (headless tests)
#   scripts/setup.sh --fuzz     also clang 16 and its libFuzzer runtime (tests/fuzz): Debian's
#                               default clang 14 cannot compile std::source_location with GCC 12's
#                               library
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config zlib1g-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev libeigen3-dev libtbb-dev python3
      openmpi-bin libopenmpi-dev  # MPI: `run` on CPU ranks and its mpi tests
      libmimalloc-dev)  # the programs' allocator (CMakeLists.txt, SHARDSCOPE_MIMALLOC)
for arg in "$@"; do
  case "$arg" in
    --viewer) pkgs+=(libimgui-dev libglfw3-dev libgl-dev libstb-dev xvfb xauth libgl1-mesa-dri) ;;
    --fuzz) pkgs+=(clang-16 libclang-rt-16-dev) ;;
    *) echo "setup: unknown option $arg (expected --viewer or --fuzz)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: all build dependencies present"
