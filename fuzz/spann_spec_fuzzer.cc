// Fuzzes the index spec parser and the manifest decoder (index/spann/spann_options.h): any string
// may be rejected; an accepted spec must round-trip through SpannSpecString, an accepted manifest
// through EncodeManifest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "index/spann/spann_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<shoal::index::SpannOptions> options = shoal::index::ParseSpannSpec(text);
  if (options.ok()) {
    const std::string canonical = shoal::index::SpannSpecString(*options);
    absl::StatusOr<shoal::index::SpannOptions> again = shoal::index::ParseSpannSpec(canonical);
    if (!again.ok() || shoal::index::SpannSpecString(*again) != canonical) std::abort();
  }
  absl::StatusOr<shoal::index::SpannManifest> manifest = shoal::index::DecodeManifest(text, "fuzz");
  if (manifest.ok()) {
    const std::string encoded = shoal::index::EncodeManifest(*manifest);
    if (!shoal::index::DecodeManifest(encoded, "fuzz").ok()) std::abort();
  }
  return 0;
}
