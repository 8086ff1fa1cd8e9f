#include "server/request_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace tern::server {
namespace {

using nlohmann::json;

RequestError to_request_error(const api::FieldError& error) { return RequestError{error.message, error.param}; }

void read_float(const json& body, const char* name, float* out) {
    if (auto value = api::field_value<double>(body, name)) *out = static_cast<float>(*value);
}

void read_sampling(const json& body, SamplingParams& sampling) {
    read_float(body, "temperature", &sampling.temperature);
    read_float(body, "top_p", &sampling.top_p);
    read_float(body, "min_p", &sampling.min_p);
    read_float(body, "presence_penalty", &sampling.presence_penalty);
    read_float(body, "frequency_penalty", &sampling.frequency_penalty);
    read_float(body, "repetition_penalty", &sampling.repetition_penalty);
    const int64_t top_k = api::field_value<int64_t>(body, "top_k").value_or(0);
    sampling.top_k = static_cast<int32_t>(std::max<int64_t>(top_k, 0));  // -1 is vLLM's "off"
}

void read_stop(const json& body, std::vector<std::string>& stop) {
    const json* value = api::find_field(body, "stop");
    if (value == nullptr) return;
    if (value->is_string()) {
        stop.push_back(value->get<std::string>());
        return;
    }
    for (const json& item : *value) stop.push_back(item.get<std::string>());
}

void read_logprobs(api::Endpoint endpoint, const json& body, CompletionRequest& request) {
    if (endpoint == api::Endpoint::kCompletions) {
        const std::optional<int> top = api::field_value<int>(body, "logprobs");  // how many alternatives
        request.logprobs = top.has_value();
        request.top_logprobs = top.value_or(0);
        return;
    }
    request.logprobs = api::field_value<bool>(body, "logprobs").value_or(false);
    request.top_logprobs = api::field_value<int>(body, "top_logprobs").value_or(0);
}

void read_flags(const json& body, CompletionRequest& request) {
    request.n = api::field_value<int>(body, "n").value_or(1);
    request.priority = api::field_value<int>(body, "priority").value_or(0);
    request.ignore_eos = api::field_value<bool>(body, "ignore_eos").value_or(false);
    request.stream = api::field_value<bool>(body, "stream").value_or(false);
    if (const json* options = api::find_field(body, "stream_options")) {
        request.include_usage = api::field_value<bool>(*options, "include_usage").value_or(false);
    }
    request.echo = api::field_value<bool>(body, "echo").value_or(false);
    request.best_of = api::field_value<int>(body, "best_of").value_or(0);
    request.suffix = api::field_value<std::string>(body, "suffix");
    if (const json* kwargs = api::find_field(body, "chat_template_kwargs")) request.chat_template_kwargs = *kwargs;
    request.cache_salt = api::field_value<std::string>(body, "cache_salt").value_or("");
    request.prompt_logprobs = api::field_value<int>(body, "prompt_logprobs");
}

// The fields that reach the engine as token ids, checked by api::check_request_body(); the vocabulary is checked
// once the request meets the model (prepare_request).
void read_token_fields(const json& body, CompletionRequest& request) {
    if (const json* biases = api::find_field(body, "logit_bias")) {
        api::decode_logit_bias(*biases, &request.sampling.logit_bias);
    }
    if (const json* ids = api::find_field(body, "stop_token_ids")) api::decode_stop_token_ids(*ids, &request.stop_token_ids);
    request.sampling.min_tokens = api::field_value<int32_t>(body, "min_tokens").value_or(0);
}

}  // namespace

std::variant<CompletionRequest, RequestError> parse_completion_request(api::Endpoint endpoint, const json& body) {
    if (auto error = api::check_request_body(endpoint, body)) return to_request_error(*error);
    CompletionRequest request;
    request.endpoint = endpoint;
    const std::optional<api::FieldError> error =
        endpoint == api::Endpoint::kCompletions
            ? api::decode_prompts(*api::find_field(body, "prompt"), &request.prompts)
            : api::decode_messages(*api::find_field(body, "messages"), &request.messages);
    if (error) return to_request_error(*error);
    request.model = api::field_value<std::string>(body, "model").value_or("");
    request.max_tokens = api::max_tokens_of(endpoint, body);
    read_sampling(body, request.sampling);
    request.seed = api::field_value<int64_t>(body, "seed");
    read_stop(body, request.stop);
    read_logprobs(endpoint, body, request);
    read_flags(body, request);
    read_token_fields(body, request);
    if (auto error = api::decode_output_constraint(body, &request.constraint)) return to_request_error(*error);
    const std::string constraint_field = request.constraint ? request.constraint->field : "";
    if (auto error = api::decode_tool_request(body, constraint_field, &request.tools)) return to_request_error(*error);
    return request;
}

uint64_t choose_seed(std::optional<int64_t> given) {
    if (given) return static_cast<uint64_t>(*given);
    // One generator per thread, seeded once from the OS: no lock between HTTP threads, and seeds of requests that
    // arrive together still differ.
    thread_local std::mt19937_64 generator{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                           std::random_device{}()};
    return generator();
}

std::optional<RequestError> check_priority(const CompletionRequest& request, engine::SchedulingPolicy policy) {
    if (request.priority == 0 || policy == engine::SchedulingPolicy::kPriority) return std::nullopt;
    return RequestError{fmt::format("'priority' {} needs a server started with --scheduling-policy priority; this one "
                                    "serves requests first come, first served (fcfs)", request.priority),
                        "priority"};
}

}  // namespace tern::server
