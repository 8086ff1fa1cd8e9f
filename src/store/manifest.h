// manifest.json of a stored version: what `tern models list` shows and what `verify` checks the file against.
#pragma once

#include <string>

#include "base/status.h"
#include "store/model_store.h"

namespace tern::store {

inline constexpr const char* kModelFileName = "model.gguf";
inline constexpr const char* kManifestFileName = "manifest.json";

Result<StoredVersion> read_manifest(const std::string& version_dir);
// Written to a temporary name, synced and renamed, so a reader sees the old manifest or the new one.
Status write_manifest(const std::string& version_dir, const StoredVersion& facts);

// Writes `text` to `path` atomically (temporary name in the same folder, fsync, rename, fsync of the folder).
Status write_file_atomically(const std::string& path, const std::string& text);
// fsync of a folder, so a rename inside it survives a crash.
Status sync_dir(const std::string& dir);

}  // namespace tern::store
