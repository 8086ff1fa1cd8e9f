// deploy/docker/Dockerfile cannot be built here (no container runtime), so what it names is checked: its runtime
// stage installs the Debian package of every shared library the tern just built links (`ldd`, `dpkg -S`), and its
// build stage installs scripts/install-deps' build packages (less the test and benchmark libraries it turns off).
#include <gtest/gtest.h>

#include <cstdio>

#include "deploy_helpers.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

// stdout of `command`; empty when it fails.
std::string output_of(const std::string& command) {
    std::string output;
    FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
    if (pipe == nullptr) return output;
    char buffer[4096];
    for (size_t read; (read = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, read);
    return ::pclose(pipe) == 0 ? output : std::string();
}

// The package names of the `apt-get install` lines between `from` and `to` in the Dockerfile.
std::set<std::string> installed_in(const std::string& dockerfile, const std::string& from, const std::string& to) {
    const size_t begin = dockerfile.find(from), end = dockerfile.find(to, begin + 1);
    std::istringstream words(dockerfile.substr(begin, end - begin));
    std::set<std::string> packages;
    for (std::string word; words >> word;) {
        if (std::regex_match(word, std::regex("[a-z0-9][a-z0-9.+-]+")) && word.find('.') == std::string::npos) {
            packages.insert(word);
        } else if (std::regex_match(word, std::regex("lib[a-z0-9+-]+[0-9.]+[0-9]"))) {
            packages.insert(word);  // versioned library packages: libcpp-httplib0.11
        }
    }
    return packages;
}

TEST(Dockerfile, RuntimeStageInstallsEveryLibraryTernLinks) {
    const std::string ldd = output_of("ldd '" + std::string(TERN_BINARY) + "'");
    if (ldd.empty() || output_of("command -v dpkg").empty()) GTEST_SKIP() << "ldd or dpkg is not available";
    const std::string dockerfile = testing::read_deploy_file("docker/Dockerfile");
    ASSERT_FALSE(dockerfile.empty());
    const std::set<std::string> runtime = installed_in(dockerfile, "FROM debian:bookworm-slim", "COPY --from");
    // Only the libraries tern names itself (DT_NEEDED): apt brings what those depend on.
    const std::string needed = output_of("objdump -p '" + std::string(TERN_BINARY) + "'");
    // In debian:bookworm-slim already (apt itself needs them).
    const std::set<std::string> in_base = {"libc6", "libstdc++6", "libgcc-s1"};
    std::istringstream lines(ldd);
    int checked = 0;
    for (std::string line; std::getline(lines, line);) {
        std::smatch match;
        if (!std::regex_search(line, match, std::regex("^\\s*([^ ]+) => (/[^ ]+)"))) continue;
        if (needed.find("NEEDED               " + match[1].str()) == std::string::npos) continue;
        // By file name: with merged /usr, dpkg knows a library under /lib that the loader finds under /usr/lib.
        const fs::path resolved = fs::canonical(match[2].str());
        const std::string file = (resolved.parent_path().filename() / resolved.filename()).string();
        const std::string owner = output_of("dpkg -S '*/" + file + "'");  // x86_64-linux-gnu/NAME: not lib32's
        ASSERT_FALSE(owner.empty()) << "no Debian package owns " << match[2];
        const std::string package = owner.substr(0, owner.find_first_of(":"));
        if (in_base.count(package) > 0) continue;
        EXPECT_EQ(runtime.count(package), 1u) << package << " (for " << match[2] << ") is not in the runtime stage";
        ++checked;
    }
    EXPECT_GE(checked, 5);
}

TEST(Dockerfile, BuildStageInstallsTheBuildPackages) {
    const std::string dockerfile = testing::read_deploy_file("docker/Dockerfile");
    const std::string install_deps = testing::read_deploy_file("../scripts/install-deps");
    ASSERT_FALSE(dockerfile.empty());
    const size_t begin = install_deps.find("packages=("), end = install_deps.find(')', begin);
    ASSERT_NE(begin, std::string::npos);
    const std::set<std::string> build = installed_in(dockerfile, "FROM debian:bookworm AS build", "WORKDIR");
    const std::set<std::string> turned_off = {"googletest", "libgtest-dev", "libgmock-dev", "libbenchmark-dev"};
    std::istringstream words(install_deps.substr(begin + 10, end - begin - 10));
    for (std::string package; words >> package;) {
        if (turned_off.count(package) == 0) EXPECT_EQ(build.count(package), 1u) << package;
    }
    EXPECT_NE(dockerfile.find("-DTERN_BUILD_TESTS=OFF -DTERN_BUILD_BENCHMARKS=OFF"), std::string::npos);
}

}  // namespace
}  // namespace tern
