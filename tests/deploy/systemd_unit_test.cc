// deploy/systemd/tern.service: `systemd-analyze verify` finds nothing to say (with ExecStart pointed at the tern
// just built, since verify checks the command exists), and `systemd-analyze security --offline=true` rates its
// exposure at most 2.0 of 10 ("OK"). Skipped where systemd-analyze is not installed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace tern {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
    int exit_code = -1;
    std::string output;
};

CommandResult run(const std::string& command) {
    const fs::path log = fs::path(::testing::TempDir()) / ("systemd_" + std::to_string(::getpid()) + ".log");
    const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
    std::ifstream stream(log);
    CommandResult result{WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                         std::string(std::istreambuf_iterator<char>(stream), {})};
    fs::remove(log);
    return result;
}

class SystemdUnit : public ::testing::Test {
protected:
    void SetUp() override {
        if (run("command -v systemd-analyze").exit_code != 0) GTEST_SKIP() << "systemd-analyze is not installed";
        std::ifstream stream(std::string(TERN_DEPLOY_DIR) + "/systemd/tern.service");
        std::string unit((std::istreambuf_iterator<char>(stream)), {});
        ASSERT_NE(unit.find("ExecStart=/usr/local/bin/tern serve"), std::string::npos);
        unit = std::regex_replace(unit, std::regex("/usr/local/bin/tern"), std::string(TERN_BINARY));
        dir_ = fs::path(::testing::TempDir()) / ("unit_" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        std::ofstream(dir_ / "tern.service") << unit;
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path dir_;
};

TEST_F(SystemdUnit, VerifiesClean) {
    const CommandResult verify = run("systemd-analyze verify '" + (dir_ / "tern.service").string() + "'");
    EXPECT_EQ(verify.exit_code, 0) << verify.output;
    EXPECT_EQ(verify.output, "") << "systemd-analyze verify has warnings";
}

TEST_F(SystemdUnit, ExposureIsLow) {
    const CommandResult security =
        run("systemd-analyze security --offline=true '" + (dir_ / "tern.service").string() + "'");
    ASSERT_EQ(security.exit_code, 0) << security.output;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(security.output, match, std::regex("Overall exposure level for [^:]+: ([0-9.]+)")))
        << security.output;
    EXPECT_LE(std::stod(match[1].str()), 2.0) << security.output;
}

}  // namespace
}  // namespace tern
