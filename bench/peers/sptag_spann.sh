#!/usr/bin/env bash
# Shoal's SSD regime against SPANN's own code (microsoft/SPTAG, SSDServing), side by side on the
# same vectors, queries and ground truth, at the same index-RAM budget, one search thread each.
#
#   bench/peers/sptag_spann.sh --sptag-src DIR [--work DIR] [--dataset SPEC] [--rounds N]
#       [--first-round R] [--ram-limit BYTES] [--sptag-sweep 8,16,..] [--shoal-sweep GRID]
#       [--warmup-queries W] [--nice N] ...
#
# It fetches nothing: --sptag-src is a SPTAG source tree you provide (measured with commit
# 4ecf249; e.g. `git clone https://github.com/microsoft/SPTAG && git -C SPTAG checkout 4ecf249`).
# SPTAG is copied to WORK/sptag-src and built there (never inside this repository); its empty
# zstd submodule is replaced by a 6-line CMake stand-in for Debian's libzstd-dev. SPTAG needs
# the Boost packages in SPTAG_PACKAGES below: they are SPTAG's dependencies, not Shoal's, and
# this script installs the missing ones itself with apt-get (--no-install-deps to refuse).
#
# Stages (each skipped when its output exists, so a rerun only measures):
#   1. build SPTAG's ssdserving (Release, GPU=OFF, nice 19)
#   2. `shoal_bench export`: WORK/data/{base,query,warmup}.fbin + truth.ibin (the `ann` ground
#      truth; warmup.fbin holds the W test queries after the timed ones, `ann --warmup-queries`)
#   3. SPTAG SPANN build: SelectHead (BKT) -> BuildHead (BKT + RNG graph) -> BuildSSDIndex
#      (the paper's SIFT1M config, Ratio sized so the head index fits --ram-limit)
#   4. Shoal's index: `shoal_bench ann --systems shoal` builds WORK/shoal-db (timed, log
#      shoal-build.log; its search point is not used: the build's calibration filled the caches)
#   5. --rounds rounds, alternating: SPTAG search (one process per SearchInternalResultNum,
#      NumberOfThreads=1, warm-up pass over warmup.fbin, /proc/PID/io polled) then Shoal's,
#      over WORK/shoal-db, one process per --shoal-sweep value (a sweep inside one process
#      would find the previous points' postings and vectors in its caches)
#   6. bench/peers/sptag_table.py: one table, best point of all rounds per recall target
#
# Builds run at nice --nice (default 10), searches at nice 5 (both engines alike).
#
# Everything it ran and printed is kept under WORK/logs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

SPTAG_PACKAGES=(cmake g++ libboost-system-dev libboost-thread-dev libboost-serialization-dev
                libboost-regex-dev libboost-filesystem-dev libzstd-dev)

sptag_src="" work="/tmp/sptag_spann" dataset="synthetic:n=2000000,d=128,seed=1,q=2000"
queries=1000 warmup_queries=1000 ram_limit=102400000 rounds=2 first_round=1 build_threads=2 jobs=2
install_deps=1 build_nice=10 search_nice=5
shoal_bench="${SHOAL_BENCH:-$root/build/bin/shoal_bench}"
# SearchInternalResultNum: heads whose postings are read per query (the paper's nprobe).
sptag_sweep="8,12,16,24,32,48,64" search_max_check=2048
shoal_sweep="target_recall=0.9,0.95,0.97"
ratio=""            # head ratio; default from --ram-limit (see below)
build_max_check=2048  # BuildSSDIndex's head search per vector (paper: 8192; 2 cores here)

usage() { sed -n '2,38p' "$0"; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --sptag-src) sptag_src="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --dataset) dataset="$2"; shift 2 ;;
    --queries) queries="$2"; shift 2 ;;
    --warmup-queries) warmup_queries="$2"; shift 2 ;;
    --nice) build_nice="$2"; shift 2 ;;
    --ram-limit) ram_limit="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --first-round) first_round="$2"; shift 2 ;;  # continue a run: its logs are kept
    --build-threads) build_threads="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --ratio) ratio="$2"; shift 2 ;;
    --build-max-check) build_max_check="$2"; shift 2 ;;
    --sptag-sweep) sptag_sweep="$2"; shift 2 ;;
    --search-max-check) search_max_check="$2"; shift 2 ;;
    --shoal-sweep) shoal_sweep="$2"; shift 2 ;;
    --shoal-bench) shoal_bench="$2"; shift 2 ;;
    --no-install-deps) install_deps=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "sptag_spann.sh: unknown argument '$1'" >&2; usage 2 ;;
  esac
done

mkdir -p "$work/logs" "$work/data"
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)] $*" | tee -a "$work/logs/run.log"; }

# --- 1. SPTAG ---------------------------------------------------------------------------------
install_sptag_deps() {
  local missing=()
  for p in "${SPTAG_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$install_deps" = 0 ]; then
    echo "sptag_spann.sh: SPTAG needs ${missing[*]} (--no-install-deps given)" >&2; exit 1
  fi
  log "installing SPTAG's build dependencies (peer only, not Shoal's): ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

ssdserving="$work/sptag-src/Release/ssdserving"
build_sptag() {
  [ -x "$ssdserving" ] && return 0
  [ -n "$sptag_src" ] || { echo "sptag_spann.sh: --sptag-src DIR is required to build SPTAG" >&2; exit 2; }
  [ -f "$sptag_src/AnnService/CMakeLists.txt" ] || { echo "sptag_spann.sh: $sptag_src is not a SPTAG tree" >&2; exit 2; }
  install_sptag_deps
  log "building SPTAG ssdserving from $sptag_src (nice $build_nice, -j$jobs)"
  mkdir -p "$work/sptag-src"
  cp -a "$sptag_src/." "$work/sptag-src/"
  local zstd="$work/sptag-src/ThirdParty/zstd/build/cmake"
  if [ ! -f "$zstd/CMakeLists.txt" ]; then  # the submodule is empty: use Debian's libzstd
    mkdir -p "$zstd"
    cat > "$zstd/CMakeLists.txt" <<'EOF'
find_library(SYSTEM_ZSTD zstd REQUIRED)
add_library(libzstd_shared INTERFACE)
target_link_libraries(libzstd_shared INTERFACE ${SYSTEM_ZSTD})
add_library(libzstd_static INTERFACE)
target_link_libraries(libzstd_static INTERFACE ${SYSTEM_ZSTD})
EOF
  fi
  local t0=$SECONDS
  nice -n "$build_nice" cmake -S "$work/sptag-src" -B "$work/sptag-build" -DCMAKE_BUILD_TYPE=Release \
    -DGPU=OFF -DLIBRARYONLY=ON >"$work/logs/sptag-cmake.log" 2>&1
  nice -n "$build_nice" cmake --build "$work/sptag-build" -j "$jobs" --target ssdserving \
    >"$work/logs/sptag-make.log" 2>&1 || { tail -30 "$work/logs/sptag-make.log"; exit 1; }
  log "SPTAG built in $((SECONDS - t0)) s: $ssdserving"
}

# --- 2. data ----------------------------------------------------------------------------------
export_data() {
  [ -f "$work/data/truth.ibin" ] && return 0
  log "exporting $dataset ($queries queries) to $work/data"
  nice -n "$build_nice" "$shoal_bench" export --dataset "$dataset" --queries "$queries" \
    --warmup-queries "$warmup_queries" --k 10 --out "$work/data" | tee "$work/logs/export.log"
}

dims() {  # rows and cols of a .fbin header
  od -An -t u4 -N 8 "$1" | awk '{print $1, $2}'
}

# --- 3. SPTAG SPANN index ---------------------------------------------------------------------
base_ini() {  # [Base] of every SPTAG config; $1 = VectorPath ("" at search: not loaded)
  local d warmup=""; d=$(dims "$work/data/base.fbin" | cut -d' ' -f2)
  [ -z "$1" ] && [ -f "$work/data/warmup.fbin" ] && warmup="$work/data/warmup.fbin"
  cat <<EOF
[Base]
ValueType=Float
DistCalcMethod=L2
IndexAlgoType=BKT
Dim=$d
VectorPath=$1
VectorType=DEFAULT
QueryPath=$work/data/query.fbin
QueryType=DEFAULT
WarmupPath=$warmup
WarmupType=DEFAULT
TruthPath=$work/data/truth.ibin
TruthType=DEFAULT
IndexDirectory=$work/sptag-index
EOF
}

head_ratio() {
  # A head costs its float vector, 32 graph neighbours (int32), its id in the translate map
  # (uint64) and a posting ListInfo (~24 B) in RAM; the BKT tree adds little. Ratio such that
  # heads * bytes_per_head <= --ram-limit.
  local n d; read -r n d < <(dims "$work/data/base.fbin")
  awk -v n="$n" -v d="$d" -v lim="$ram_limit" \
    'BEGIN { per = 4 * d + 32 * 4 + 8 + 24 + 16; printf "%.4f", lim / per / n * 0.95 }'
}

build_sptag_index() {
  [ -f "$work/sptag-index/SPTAGFullList.bin" ] && return 0
  [ -n "$ratio" ] || ratio=$(head_ratio)
  mkdir -p "$work/sptag-index" "$work/sptag-tmp"
  { base_ini "$work/data/base.fbin"; cat <<EOF

[SelectHead]
isExecute=true
TreeNumber=1
BKTKmeansK=32
BKTLeafSize=8
SamplesNumber=1000
SaveBKT=false
SelectThreshold=50
SplitFactor=6
SplitThreshold=100
Ratio=$ratio
NumberOfThreads=$build_threads
BKTLambdaFactor=-1

[BuildHead]
isExecute=true
NeighborhoodSize=32
TPTNumber=32
TPTLeafSize=2000
MaxCheck=8192
MaxCheckForRefineGraph=8192
RefineIterations=3
NumberOfThreads=$build_threads
BKTLambdaFactor=-1

[BuildSSDIndex]
isExecute=true
BuildSsdIndex=true
InternalResultNum=64
ReplicaCount=8
PostingPageLimit=12
NumberOfThreads=$build_threads
MaxCheck=$build_max_check
TmpDir=$work/sptag-tmp

[SearchSSDIndex]
isExecute=false
EOF
  } >"$work/sptag-build.ini"
  log "SPTAG SPANN build (Ratio=$ratio, $build_threads threads, BuildSSDIndex MaxCheck=$build_max_check)"
  local t0; t0=$(date +%s.%N)
  (cd "$work" && nice -n "$build_nice" /usr/bin/time -v stdbuf -oL "$ssdserving" "$work/sptag-build.ini") \
    >"$work/logs/sptag-build.log" 2>&1 || { tail -30 "$work/logs/sptag-build.log"; exit 1; }
  local t1; t1=$(date +%s.%N)
  echo "wall_seconds $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')" >>"$work/logs/sptag-build.log"
  log "SPTAG build done: $(grep -a 'build ssd time' "$work/logs/sptag-build.log" | tail -1)"
}

# --- 4. searches --------------------------------------------------------------------------------
# One SPTAG search process per point; polls its /proc/PID/io and VmRSS while it runs.
sptag_search_point() {  # $1 = SearchInternalResultNum, $2 = round
  local irn="$1" round="$2" out="$work/logs/sptag-r$2-irn$1"
  { base_ini ""; cat <<EOF

[SelectHead]
isExecute=false

[BuildHead]
isExecute=false

[BuildSSDIndex]
isExecute=true
BuildSsdIndex=false
NumberOfThreads=1

[SearchSSDIndex]
isExecute=true
BuildSsdIndex=false
InternalResultNum=$irn
NumberOfThreads=1
HashTableExponent=4
ResultNum=10
MaxCheck=$search_max_check
MaxDistRatio=8.0
SearchPostingPageLimit=12
EOF
  } >"$out.ini"
  (cd "$work" && exec nice -n "$search_nice" stdbuf -oL "$ssdserving" "$out.ini") >"$out.log" 2>&1 &
  local pid=$! io="" rss=0
  while kill -0 "$pid" 2>/dev/null; do
    io=$(cat "/proc/$pid/io" 2>/dev/null || echo "$io")
    local r; r=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$r" ] && [ "$r" -gt "$rss" ] && rss=$r
    sleep 0.05
  done
  wait "$pid" || { tail -20 "$out.log"; return 1; }
  { echo "proc_io_read_bytes $(echo "$io" | awk '/^read_bytes/{print $2}')"
    echo "vm_hwm_kib $rss"; echo "queries $queries"; echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
    [ -f "$work/data/warmup.fbin" ] && echo "warmup_queries $(dims "$work/data/warmup.fbin" | cut -d' ' -f1)"
  } >>"$out.log"
}

shoal_point() {  # $1 = KEY=V, $2 = log name, $3 = nice; builds WORK/shoal-db when absent
  local out="$work/logs/$2"
  rm -f "$out.csv"
  nice -n "$3" /usr/bin/time -v "$shoal_bench" ann --dataset "$dataset" --systems shoal \
    --queries "$queries" --warmup-queries "$warmup_queries" --threads 1 --runs 1 \
    --shoal-ram-limit "$ram_limit" --shoal-sweep "$1" --data "$work/shoal-db" \
    --csv "$out.csv" >"$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
  echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out.log"
}

build_shoal_index() {
  [ -d "$work/shoal-db" ] && return 0
  log "Shoal build (auto spec, --shoal-ram-limit $ram_limit, 1 build thread)"
  shoal_point "${shoal_sweep%%,*}" shoal-build "$build_nice"
  log "Shoal build done: $(grep -a -o 'build [0-9.]* s' "$work/logs/shoal-build.log" | head -1)"
}

shoal_round() {  # $1 = round; one fresh process per value of --shoal-sweep KEY=V1,V2,..
  local key="${shoal_sweep%%=*}" vals="${shoal_sweep#*=}" v
  for v in ${vals//,/ }; do shoal_point "$key=$v" "shoal-r$1-$key-$v" "$search_nice"; done
}

build_sptag
export_data
build_sptag_index
build_shoal_index
for round in $(seq "$first_round" "$rounds"); do
  log "round $round: SPTAG points $sptag_sweep"
  for irn in ${sptag_sweep//,/ }; do sptag_search_point "$irn" "$round"; done
  log "round $round: Shoal (--shoal-ram-limit $ram_limit)"
  shoal_round "$round"
done
log "done"
/usr/bin/python3 "$here/sptag_table.py" "$work" | tee "$work/logs/table.md"
