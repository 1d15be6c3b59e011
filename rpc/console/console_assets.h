// The web console's front end (the files of rpc/console/web/), embedded into shoald at build
// time: CMake runs embed_assets.cmake, which writes console_assets.cc in the build tree with
// each file's bytes. Nothing is read from disk or downloaded at run time.
#ifndef SHOAL_RPC_CONSOLE_CONSOLE_ASSETS_H_
#define SHOAL_RPC_CONSOLE_CONSOLE_ASSETS_H_

#include <cstddef>

namespace shoal::rpc::console {

struct ConsoleAsset {
  const char* path;          // relative to web/, e.g. "index.html", "js/app.js"
  const char* content_type;  // from the extension
  const unsigned char* data;
  size_t size;
};

// Every embedded file (generated).
extern const ConsoleAsset kConsoleAssets[];
extern const size_t kConsoleAssetCount;

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_CONSOLE_ASSETS_H_
