#include "base/build_info.h"

#include "absl/strings/str_cat.h"
#include "shoal/build_version.h"  // generated: SHOAL_PROJECT_VERSION, SHOAL_GIT_DESCRIBE

namespace shoal::base {

std::string ProjectVersion() { return SHOAL_PROJECT_VERSION; }

std::string GitDescribe() { return SHOAL_GIT_DESCRIBE; }

std::string VersionText() { return absl::StrCat(ProjectVersion(), " (git ", GitDescribe(), ")"); }

}  // namespace shoal::base
