#include <gtest/gtest.h>

#include <fstream>

#include "server/auth.h"

namespace tern::server {
namespace {

TEST(ApiKeys, BearerKeysAreCheckedAgainstEveryKey) {
    const ApiKeys keys({"alpha", "beta-key"});
    EXPECT_TRUE(keys.enabled());
    EXPECT_TRUE(keys.allows("Bearer alpha"));
    EXPECT_TRUE(keys.allows("Bearer beta-key"));
    EXPECT_FALSE(keys.allows("Bearer alph"));
    EXPECT_FALSE(keys.allows("Bearer alphaa"));
    EXPECT_FALSE(keys.allows("alpha"));
    EXPECT_FALSE(keys.allows(""));
    EXPECT_TRUE(ApiKeys().allows("")) << "no keys configured: open";
}

TEST(ApiKeys, FileSkipsCommentsAndBlankLines) {
    const std::string path = std::string(TERN_TEST_TMP) + "/api-keys.txt";
    std::ofstream(path) << "# team keys\n\n  first \r\nsecond\n";
    auto keys = ApiKeys::from_file(path, {"flag-key"});
    ASSERT_TRUE(keys.is_ok()) << keys.status().message();
    EXPECT_TRUE(keys.value().allows("Bearer first"));
    EXPECT_TRUE(keys.value().allows("Bearer second"));
    EXPECT_TRUE(keys.value().allows("Bearer flag-key"));
    EXPECT_FALSE(keys.value().allows("Bearer # team keys"));
    EXPECT_FALSE(ApiKeys::from_file(path + ".missing", {}).is_ok());
}

TEST(ApiKeys, ConstantTimeEqual) {
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "ab"));
    EXPECT_TRUE(constant_time_equal("", ""));
}

}  // namespace
}  // namespace tern::server
