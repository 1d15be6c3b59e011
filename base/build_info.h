// What was built: the project version (CMakeLists.txt's project(VERSION)) and `git describe` of
// the source tree at build time, for --version and the shoal_build_info metric.
//
//   std::cout << "shoal " << shoal::base::VersionText() << "\n";   // shoal 0.1.0 (git 4ff5e40)
//
// The values come from a header the build regenerates on every build (base/build_version.cmake)
// and rewrites only when they change, so a new commit recompiles build_info.cc alone.
// Constant data; thread-safe.
#ifndef SHOAL_BASE_BUILD_INFO_H_
#define SHOAL_BASE_BUILD_INFO_H_

#include <string>

namespace shoal::base {

// "0.1.0".
std::string ProjectVersion();
// `git describe --always --dirty` of the sources ("4ff5e40", "4ff5e40-dirty"); "unknown" when
// they were not built from a git checkout.
std::string GitDescribe();
// "0.1.0 (git 4ff5e40)".
std::string VersionText();

}  // namespace shoal::base

#endif  // SHOAL_BASE_BUILD_INFO_H_
