#include "net/url.h"

#include <gtest/gtest.h>

namespace tern::net {
namespace {

TEST(BaseUrl, ParsesHostPortAndPrefix) {
    Result<BaseUrl> url = parse_base_url("http://127.0.0.1:8000");
    ASSERT_TRUE(url.is_ok());
    EXPECT_EQ(url.value().host, "127.0.0.1");
    EXPECT_EQ(url.value().port, 8000);
    EXPECT_EQ(url.value().path_prefix, "");
    EXPECT_EQ(url.value().join("/v1/completions"), "/v1/completions");
    EXPECT_EQ(url.value().origin(), "http://127.0.0.1:8000");

    Result<BaseUrl> prefixed = parse_base_url("localhost/api/");
    ASSERT_TRUE(prefixed.is_ok());
    EXPECT_EQ(prefixed.value().port, 80);
    EXPECT_EQ(prefixed.value().join("/v1/models"), "/api/v1/models");

    Result<BaseUrl> ipv6 = parse_base_url("http://[::1]:9000/x");
    ASSERT_TRUE(ipv6.is_ok());
    EXPECT_EQ(ipv6.value().host, "::1");
    EXPECT_EQ(ipv6.value().origin(), "http://[::1]:9000");
}

TEST(BaseUrl, RejectsWhatItCannotReach) {
    for (const char* bad : {"https://example.com", "http://", "http://host:0", "http://host:70000", "http://host:8x",
                            "ftp://host", "http://[::1"}) {
        EXPECT_FALSE(parse_base_url(bad).is_ok()) << bad;
    }
}

}  // namespace
}  // namespace tern::net
