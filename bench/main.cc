// shoal_bench: whole-system benchmarks of Shoal against reference libraries, one subcommand
// each (`shoal_bench flat ...`, `shoal_bench ann ...`; `shoal_bench --help` lists them). Each
// subcommand lives in its own *_bench.cc and registers itself here.
#include <CLI/CLI.hpp>

#include "bench/ann_bench.h"
#include "bench/blas_env.h"
#include "bench/cache_bench.h"
#include "bench/cluster_bench.h"
#include "bench/export_bench.h"
#include "bench/flat_bench.h"
#include "bench/kmeans_bench.h"
#include "bench/serve_bench.h"
#include "bench/tenants_bench.h"
#include "bench/updates_bench.h"

int main(int argc, char** argv) {
  shoal::bench::PrepareBlasEnvironment(argv);
  CLI::App app("Shoal whole-system benchmarks", "shoal_bench");
  app.require_subcommand(1);
  int exit_code = 0;
  shoal::bench::RegisterFlatCommand(app, &exit_code);
  shoal::bench::RegisterAnnCommand(app, &exit_code);
  shoal::bench::RegisterKMeansCommand(app, &exit_code);
  shoal::bench::RegisterUpdatesCommand(app, &exit_code);
  shoal::bench::RegisterServeCommand(app, &exit_code);
  shoal::bench::RegisterCacheCommand(app, &exit_code);
  shoal::bench::RegisterTenantsCommand(app, &exit_code);
  shoal::bench::RegisterClusterCommand(app, &exit_code);
  shoal::bench::RegisterExportCommand(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
