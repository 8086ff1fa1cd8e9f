#include "http/exchange.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "api/openai_types.h"

namespace tern::http {

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t idx = 0; idx < a.size(); ++idx) {
        if (std::tolower(static_cast<unsigned char>(a[idx])) != std::tolower(static_cast<unsigned char>(b[idx]))) {
            return false;
        }
    }
    return true;
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
        if (equal_ignoring_case(key, name)) return value;
    }
    return {};
}

std::optional<std::string> Request::query_value(std::string_view name) const {
    std::string_view rest = query;
    while (!rest.empty()) {
        const size_t amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        const size_t equals = pair.find('=');
        if (pair.substr(0, equals) == name) {
            return std::string(equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1));
        }
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
    return std::nullopt;
}

Answer json_answer(int status, std::string body) { return Answer{status, "application/json", std::move(body), {}}; }

void set_retry_after(Answer& answer, int seconds) {
    for (auto& [name, value] : answer.headers) {
        if (equal_ignoring_case(name, "Retry-After")) {
            value = std::to_string(seconds);
            return;
        }
    }
    answer.headers.emplace_back("Retry-After", std::to_string(seconds));
}

void add_retry_after_if_refused(Answer& answer) {
    if (answer.status != 429 && answer.status != 503) return;
    for (const auto& [name, value] : answer.headers) {
        if (equal_ignoring_case(name, "Retry-After")) return;
    }
    answer.headers.emplace_back("Retry-After", "1");
}

Answer error_answer(int status, const std::string& message, const std::string& param) {
    Answer answer = json_answer(status, api::error_body(status, message, param)
                                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    add_retry_after_if_refused(answer);
    return answer;
}

}  // namespace tern::http
