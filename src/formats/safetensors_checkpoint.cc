// Checkpoints in one file or sharded. A sharded checkpoint's index, model.safetensors.index.json, is
//   {"metadata": {...}, "weight_map": {"<tensor name>": "<shard file name>", ...}}
// with shard names relative to the index's folder.
#include <fmt/format.h>

#include <filesystem>

#include "formats/safetensors.h"
#include "formats/strict_json.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

bool file_exists(const fs::path& path) {
    std::error_code error;
    return fs::is_regular_file(path, error);
}

// Shards must sit beside the index: a name that climbs out of the folder is refused rather than followed.
bool is_plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\\') == std::string::npos;
}

}  // namespace

Result<std::map<std::string, std::string>> safetensors_weight_map(const nlohmann::json& index,
                                                                  const std::string& index_path) {
    const auto weight_map = index.is_object() ? index.find("weight_map") : index.end();
    if (!index.is_object() || weight_map == index.end() || !weight_map->is_object()) {
        return invalid_argument(fmt::format("{}: no 'weight_map' object (tensor name -> shard file)", index_path));
    }
    std::map<std::string, std::string> tensor_to_shard;
    for (const auto& [tensor, shard] : weight_map->items()) {
        if (!shard.is_string() || !is_plain_file_name(shard.get<std::string>())) {
            return invalid_argument(fmt::format("{}: weight_map entry for '{}' must be a file name in the same folder, "
                                                "found {}", index_path, tensor, shard.dump()));
        }
        tensor_to_shard.emplace(tensor, shard.get<std::string>());
    }
    if (tensor_to_shard.empty()) return invalid_argument(fmt::format("{}: weight_map lists no tensors", index_path));
    return tensor_to_shard;
}

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::open_file(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::open(path));
    std::unique_ptr<SafetensorsCheckpoint> checkpoint(new SafetensorsCheckpoint());
    checkpoint->source_ = path;
    for (const SafetensorsTensor& tensor : file->tensors()) {
        checkpoint->entries_.emplace(tensor.name, Entry{&tensor, file.get()});
    }
    checkpoint->files_.push_back(std::move(file));
    return checkpoint;
}

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::open_index(const std::string& index_path) {
    TERN_ASSIGN_OR_RETURN(nlohmann::json index, read_strict_json_file(index_path));
    TERN_ASSIGN_OR_RETURN(auto tensor_to_shard, safetensors_weight_map(index, index_path));
    std::unique_ptr<SafetensorsCheckpoint> checkpoint(new SafetensorsCheckpoint());
    checkpoint->source_ = index_path;
    const fs::path folder = fs::path(index_path).parent_path();
    std::map<std::string, const SafetensorsFile*> shards;
    for (const auto& [tensor_name, shard] : tensor_to_shard) {
        if (shards.count(shard) != 0) continue;
        const std::string shard_path = (folder / shard).string();
        if (!file_exists(shard_path)) {
            return Status(StatusCode::kNotFound,
                          fmt::format("{}: shard '{}' (holding tensor '{}') is missing: no file {}", index_path, shard,
                                      tensor_name, shard_path));
        }
        TERN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::open(shard_path));
        shards.emplace(shard, file.get());
        checkpoint->files_.push_back(std::move(file));
    }
    for (const auto& [tensor_name, shard] : tensor_to_shard) {
        const SafetensorsFile* file = shards.at(shard);
        const SafetensorsTensor* tensor = file->find(tensor_name);
        if (tensor == nullptr) {
            return invalid_argument(fmt::format("{}: lists tensor '{}' in shard '{}', but that shard has no such "
                                                "tensor", index_path, tensor_name, shard));
        }
        checkpoint->entries_.emplace(tensor_name, Entry{tensor, file});
    }
    return checkpoint;
}

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::open_dir(const std::string& dir) {
    const fs::path folder(dir);
    if (file_exists(folder / kIndexFile)) return open_index((folder / kIndexFile).string());
    if (file_exists(folder / kSingleFile)) return open_file((folder / kSingleFile).string());
    return Status(StatusCode::kNotFound,
                  fmt::format("{}: no {} or {}; tern reads Hugging Face checkpoints in safetensors format", dir,
                              kSingleFile, kIndexFile));
}

const SafetensorsCheckpoint::Entry* SafetensorsCheckpoint::find(std::string_view name) const {
    auto found = entries_.find(name);
    return found == entries_.end() ? nullptr : &found->second;
}

}  // namespace tern
