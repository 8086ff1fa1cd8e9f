#include "bench/machine_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace tern::bench {
namespace {

// The value of the first "key : value" line of a /proc file whose key is `key`.
std::string proc_field(const char* path, const std::string& key) {
    std::ifstream file(path);
    std::string line;
    while (std::getline(file, line)) {
        if (line.compare(0, key.size(), key) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
    }
    return "";
}

}  // namespace

nlohmann::json machine_facts() {
    nlohmann::json facts = nlohmann::json::object();
    char hostname[256] = {};
    if (::gethostname(hostname, sizeof(hostname) - 1) == 0) facts["hostname"] = hostname;
    utsname names{};
    if (::uname(&names) == 0) {
        facts["os"] = names.sysname;
        facts["kernel"] = names.release;
        facts["arch"] = names.machine;
    }
    facts["cpu_model"] = proc_field("/proc/cpuinfo", "model name");
    facts["logical_cpus"] = std::thread::hardware_concurrency();
    const std::string memory_kb = proc_field("/proc/meminfo", "MemTotal");
    if (!memory_kb.empty()) facts["memory_gib"] = std::stod(memory_kb) / (1024.0 * 1024.0);
#if defined(__clang__)
    facts["compiler"] = "clang " __clang_version__;
#elif defined(__GNUC__)
    facts["compiler"] = "gcc " __VERSION__;
#endif
    return facts;
}

std::string local_timestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[64] = {};
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S%z", &local);
    return text;
}

}  // namespace tern::bench
