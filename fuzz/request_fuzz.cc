// Request bodies from any client: JSON text for /v1/completions and /v1/chat/completions. The field rules
// (api::check_request_body) and the decoder must agree on what is refused, a body they accept must encode back to a
// body they accept with the same meaning (to_json is what tern route and tern bench send), and nothing may crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "api/request_fields.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return 0;
    for (tern::api::Endpoint endpoint : {tern::api::Endpoint::kCompletions, tern::api::Endpoint::kChatCompletions}) {
        auto decoded = tern::api::parse_generation_request(endpoint, body);
        const bool refused = tern::api::check_request_body(endpoint, body).has_value();
        TERN_FUZZ_CHECK(decoded.is_ok() != refused, "the rules and the decoder disagree");
        if (!decoded.is_ok()) continue;
        const nlohmann::json encoded = tern::api::to_json(decoded.value());
        auto again = tern::api::parse_generation_request(endpoint, encoded);
        TERN_FUZZ_CHECK(again.is_ok(), "an accepted request encodes to a refused one");
        TERN_FUZZ_CHECK(tern::api::to_json(again.value()) == encoded, "encoding is not stable");
    }
    return 0;
}
