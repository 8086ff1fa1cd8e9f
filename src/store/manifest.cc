#include "store/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tern::store {

Result<StoredVersion> read_manifest(const std::string& version_dir) {
    const std::string path = version_dir + "/" + kManifestFileName;
    std::ifstream in(path);
    if (!in) return not_found("no manifest at " + path);
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("sha256") || !json["sha256"].is_string()) {
        return invalid_argument(path + " is not a manifest tern wrote (no \"sha256\"): remove the version and pull it again");
    }
    StoredVersion facts;
    facts.version = std::filesystem::path(version_dir).filename().string();
    facts.path = version_dir + "/" + kModelFileName;
    facts.size = json.value("size", uint64_t{0});
    facts.sha256 = json.value("sha256", std::string());
    facts.checksum_from = json.value("checksum_from", std::string());
    facts.source = json.value("source", std::string());
    facts.installed_at = json.value("installed_at", std::string());
    facts.architecture = json.value("architecture", std::string());
    facts.weight_type = json.value("weight_type", std::string());
    return facts;
}

Status write_manifest(const std::string& version_dir, const StoredVersion& facts) {
    const nlohmann::json json = {{"version", facts.version},         {"size", facts.size},
                                 {"sha256", facts.sha256},           {"checksum_from", facts.checksum_from},
                                 {"source", facts.source},           {"installed_at", facts.installed_at},
                                 {"architecture", facts.architecture}, {"weight_type", facts.weight_type}};
    return write_file_atomically(version_dir + "/" + kManifestFileName, json.dump(2) + "\n");
}

Status sync_dir(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return internal_error(fmt::format("cannot open {}: {}", dir, std::strerror(errno)));
    const int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return internal_error(fmt::format("cannot sync {}: {}", dir, std::strerror(errno)));
    return Status::ok();
}

Status write_file_atomically(const std::string& path, const std::string& text) {
    const std::string temp = fmt::format("{}.tmp-{}", path, ::getpid());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return internal_error(fmt::format("cannot create {}: {}", temp, std::strerror(errno)));
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
    const int code = errno;
    ::close(fd);
    if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
        ::unlink(temp.c_str());
        return internal_error(fmt::format("cannot write {}: {}", path, std::strerror(written ? errno : code)));
    }
    return sync_dir(std::filesystem::path(path).parent_path().string());
}

}  // namespace tern::store
