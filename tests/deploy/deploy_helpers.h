// What the deploy/ checks share: the metric names a text reads, the ones tern serve exports, and running a tool.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/server_metrics.h"

namespace tern::testing {

inline std::string read_deploy_file(const std::string& relative) {
    std::ifstream stream(std::string(TERN_DEPLOY_DIR) + "/" + relative);
    return std::string(std::istreambuf_iterator<char>(stream), {});
}

// The tern: metrics `text` reads, a histogram's _bucket / _count / _sum series by the histogram's name.
inline std::set<std::string> metrics_read_by(const std::string& text) {
    std::set<std::string> used;
    const std::regex name("tern:[a-z_]+");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
        std::string metric = it->str();
        for (const char* suffix : {"_bucket", "_count", "_sum"}) {
            const size_t length = std::strlen(suffix);
            if (metric.size() > length && metric.ends_with(suffix)) metric.resize(metric.size() - length);
        }
        used.insert(metric);
    }
    return used;
}

// Each metric of `used` that tern serve does not export (its /metrics rendering has no "# TYPE name" line).
inline std::set<std::string> not_exported(const std::set<std::string>& used) {
    auto metrics = server::ServerMetrics::create(1, 1);
    const std::string exported = metrics.is_ok() ? metrics.value()->render() : "";
    std::set<std::string> missing;
    for (const std::string& metric : used) {
        if (exported.find("# TYPE " + metric + " ") == std::string::npos) missing.insert(metric);
    }
    return missing;
}

struct ToolResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr
};

inline ToolResult run_tool(const std::string& command) {
    const std::filesystem::path log =
        std::filesystem::temp_directory_path() / ("tern_deploy_" + std::to_string(::getpid()) + ".log");
    const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
    std::ifstream stream(log);
    ToolResult result{WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                      std::string(std::istreambuf_iterator<char>(stream), {})};
    std::filesystem::remove(log);
    return result;
}

inline bool have_tool(const std::string& name) { return run_tool("command -v " + name).exit_code == 0; }

}  // namespace tern::testing
