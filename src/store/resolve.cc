#include "store/resolve.h"

#include <filesystem>

#include <fmt/format.h>

#include "store/model_store.h"

namespace tern::store {

Result<ResolvedModel> resolve_model_argument(const std::string& argument, const std::string& root) {
    std::error_code error;
    if (std::filesystem::exists(argument, error)) return ResolvedModel{argument, false};
    Result<ModelRef> ref = parse_model_ref(argument);
    if (!ref.is_ok()) return not_found(fmt::format("no such file: {}", argument));
    Result<std::string> path = ModelStore(root).resolve(ref.value());
    if (!path.is_ok()) {
        if (path.status().code() != StatusCode::kNotFound || path.status().message().find("no model '") != 0) {
            return path.status();
        }
        return not_found(fmt::format("{} is neither a file nor a model in the store at {} (`tern models list` shows "
                                     "what it holds)",
                                     argument, root));
    }
    return ResolvedModel{path.value(), true};
}

}  // namespace tern::store
