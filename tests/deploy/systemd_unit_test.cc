// deploy/systemd/tern.service: `systemd-analyze verify` finds nothing to say (with ExecStart pointed at the tern
// just built, since verify checks the command exists), and `systemd-analyze security --offline=true` rates its
// exposure at most 2.0 of 10 ("OK"). Skipped where systemd-analyze is not installed.
#include <gtest/gtest.h>

#include "deploy_helpers.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

class SystemdUnit : public ::testing::Test {
protected:
    void SetUp() override {
        if (!testing::have_tool("systemd-analyze")) GTEST_SKIP() << "systemd-analyze is not installed";
        std::string unit = testing::read_deploy_file("systemd/tern.service");
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
    const testing::ToolResult verify =
        testing::run_tool("systemd-analyze verify '" + (dir_ / "tern.service").string() + "'");
    EXPECT_EQ(verify.exit_code, 0) << verify.output;
    EXPECT_EQ(verify.output, "") << "systemd-analyze verify has warnings";
}

TEST_F(SystemdUnit, ExposureIsLow) {
    const testing::ToolResult security =
        testing::run_tool("systemd-analyze security --offline=true '" + (dir_ / "tern.service").string() + "'");
    ASSERT_EQ(security.exit_code, 0) << security.output;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(security.output, match, std::regex("Overall exposure level for [^:]+: ([0-9.]+)")))
        << security.output;
    EXPECT_LE(std::stod(match[1].str()), 2.0) << security.output;
}

}  // namespace
}  // namespace tern
