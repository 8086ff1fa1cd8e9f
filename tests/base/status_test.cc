#include <gtest/gtest.h>

#include "base/fp16.h"
#include "base/status.h"

namespace tern {
namespace {

Result<int> parse_positive(int value) {
    if (value <= 0) return invalid_argument("value must be positive, got " + std::to_string(value));
    return value;
}

Status use_twice(int value, int* out) {
    TERN_ASSIGN_OR_RETURN(int parsed, parse_positive(value));
    *out = parsed * 2;
    return Status::ok();
}

TEST(Status, ResultCarriesValueOrError) {
    int out = 0;
    EXPECT_TRUE(use_twice(4, &out).is_ok());
    EXPECT_EQ(out, 8);
    const Status failed = use_twice(-1, &out);
    EXPECT_EQ(failed.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(failed.message(), "value must be positive, got -1");
}

TEST(Status, ValueOfFailedResultIsAProgrammingError) {
    Result<int> failed = parse_positive(0);
    EXPECT_DEATH((void)failed.value(), "value\\(\\) of a failed Result: value must be positive");
}

}  // namespace
}  // namespace tern
