# Shared by scripts/run and scripts/test: install missing Debian packages, configure, build.
# Source it; it defines functions only.

SHOAL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHOAL_BUILD="${SHOAL_BUILD:-$SHOAL_ROOT/build}"

# Debian 12 packages Shoal builds, tests and benchmarks with. scripts/check-packages (run by
# .ci/run) fails when the build uses a package that is neither here nor pulled in by one here.
SHOAL_PACKAGES=(
  build-essential cmake pkg-config ccache git
  librocksdb-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libfaiss-dev libopenblas-dev libabsl-dev liburing-dev zlib1g-dev libhdf5-dev
  libgtest-dev libgmock-dev libbenchmark-dev libhnswlib-dev prometheus-cpp-dev libcivetweb-dev libcli11-dev
  nlohmann-json3-dev
  libnats-dev libcurl4-openssl-dev  # cluster/: NATS JetStream client; etcd's JSON gateway over HTTP
  etcd-server nats-server  # tests/e2e/cluster_*: a real etcd and NATS JetStream beside shoald
  dataset-fashion-mnist
  libreadline-dev python3-grpcio python3-protobuf python3-numpy openssl
  python3-venv python3-pip python3-setuptools python3-matplotlib
  pybind11-dev python3-dev python3-yaml  # embedded_python/ and bench/ann_benchmarks/
  chromium chromium-driver python3-selenium  # tests/console: the web console in a browser
  clang-14 libclang-rt-14-dev  # scripts/fuzz: libFuzzer, ASan and UBSan runtimes
)

shoal_install_deps() {
  local missing=()
  for p in "${SHOAL_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "shoal: installing missing packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# shoal_build [TARGET...]: configure (Release, CUDA when nvcc is found) and build with -j2.
shoal_build() {
  cmake -S "$SHOAL_ROOT" -B "$SHOAL_BUILD" -DCMAKE_BUILD_TYPE=Release ${SHOAL_CMAKE_ARGS:-}
  if [ $# -gt 0 ]; then
    cmake --build "$SHOAL_BUILD" -j "${SHOAL_JOBS:-2}" --target "$@"
  else
    cmake --build "$SHOAL_BUILD" -j "${SHOAL_JOBS:-2}"
  fi
}

# shoal_configure_asan: the one ASan + UBSan build (clang-14, -O1, asserts on, line tables only)
# that scripts/sanitize asan builds its unit tests in and scripts/fuzz its libFuzzer targets in,
# so that CI compiles the libraries once. SHOAL_ASAN_BUILD overrides the directory (build-asan/).
SHOAL_ASAN_BUILD="${SHOAL_ASAN_BUILD:-$SHOAL_ROOT/build-asan}"
shoal_configure_asan() {
  CC=clang-14 CXX=clang++-14 cmake -S "$SHOAL_ROOT" -B "$SHOAL_ASAN_BUILD" \
    -DCMAKE_BUILD_TYPE=Debug -DSHOAL_FUZZ=ON -DSHOAL_WITH_CUDA=OFF \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only"
}
