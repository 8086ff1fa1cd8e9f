// What `-m ARG` loads in every command: ARG itself when a file or folder of that name exists (a path always wins),
// else the store's model `name[@version]`.
#pragma once

#include <string>

#include "base/status.h"

namespace tern::store {

struct ResolvedModel {
    std::string path;
    bool from_store = false;
};

Result<ResolvedModel> resolve_model_argument(const std::string& argument, const std::string& root);

}  // namespace tern::store
