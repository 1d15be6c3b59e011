// Threading and CPU set-up for the FAISS half of the benchmarks.
//
// Debian's FAISS calls BLAS through OpenBLAS, whose run-time CPU detection can misread these
// AVX-512 machines and pick a slow kernel; and FAISS mixes OpenMP threads with OpenBLAS's own
// pool, which spin against each other on 2 cores (FAISS flat at 2 threads measured 5x slower
// than at 1 until OpenMP threads were told to sleep instead). Both libraries read their
// environment once, while being loaded, before main(); so setting it from main() only works
// by re-executing the program.
#ifndef SHOAL_BENCH_BLAS_ENV_H_
#define SHOAL_BENCH_BLAS_ENV_H_

#include <string>

namespace shoal::bench {

// Call first thing in main(). Sets OPENBLAS_CORETYPE=SkylakeX and OMP_WAIT_POLICY=PASSIVE
// where the user has not set them and, if it set either, re-executes this program
// (/proc/self/exe) with the same arguments. Returns when nothing needed setting or the
// re-exec failed (a warning is printed; the libraries' defaults then stay).
void PrepareBlasEnvironment(char** argv);

// Caps OpenBLAS's own thread pool (separate from OpenMP's) at `threads`.
void SetBlasThreads(int threads);

// One line for bench output: the kernel OpenBLAS chose (openblas_get_corename()) and where
// the settings above came from, e.g. "SkylakeX (OPENBLAS_CORETYPE=SkylakeX, ...)".
std::string BlasDescription();

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_BLAS_ENV_H_
