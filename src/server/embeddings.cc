#include "server/embeddings.h"

#include "api/request_fields.h"

#include <fmt/format.h>

#include <algorithm>

#include <cstring>

namespace tern::server {
namespace {

using nlohmann::json;

// `input`: the four forms of a completions prompt (api::decode_prompts), but every text non-empty and at most
// kMaxEmbeddingInputs of them.
std::optional<RequestError> read_inputs(const json& input, std::vector<PromptInput>& inputs) {
    const RequestError wrong{"'input' must be a non-empty string, a list of strings, a list of token ids or a list of "
                             "such lists", "input"};
    if (input.is_array() && !input.empty() && !input[0].is_number() && input.size() > kMaxEmbeddingInputs) {
        return RequestError{fmt::format("'input' holds {} items; at most {} are taken per request", input.size(),
                                        kMaxEmbeddingInputs), "input"};
    }
    if (api::decode_prompts(input, &inputs)) return wrong;
    const bool empty_text = std::any_of(inputs.begin(), inputs.end(),
                                        [](const PromptInput& one) { return !one.is_tokens && one.text.empty(); });
    return empty_text ? std::optional(wrong) : std::nullopt;
}

}  // namespace

std::variant<EmbeddingRequest, RequestError> parse_embedding_request(const json& body, int64_t embedding_dim) {
    static const char* const kFields[] = {"model", "input", "encoding_format", "dimensions", "user"};
    for (const auto& [name, value] : body.items()) {
        if (std::find(std::begin(kFields), std::end(kFields), name) == std::end(kFields)) {
            return RequestError{fmt::format("'{}' is not a field of an embeddings request", name), name};
        }
    }
    EmbeddingRequest request;
    if (auto model = body.find("model"); model != body.end() && !model->is_null()) {
        if (!model->is_string()) return RequestError{"'model' must be a string", "model"};
        request.model = model->get<std::string>();
    }
    auto input = body.find("input");
    if (input == body.end()) return RequestError{"'input' is required", "input"};
    if (auto error = read_inputs(*input, request.inputs)) return *error;
    if (auto format = body.find("encoding_format"); format != body.end() && !format->is_null()) {
        if (*format != "float" && *format != "base64") {
            return RequestError{"'encoding_format' must be \"float\" or \"base64\"", "encoding_format"};
        }
        request.base64 = *format == "base64";
    }
    if (auto dimensions = body.find("dimensions"); dimensions != body.end() && !dimensions->is_null()) {
        if (!dimensions->is_number_integer() || dimensions->get<int64_t>() != embedding_dim) {
            return RequestError{fmt::format("'dimensions' can only be this model's {}: tern does not shorten embeddings",
                                            embedding_dim), "dimensions"};
        }
    }
    return request;
}

std::string base64_encode(const void* data, size_t size) {
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::string text;
    text.reserve((size + 2) / 3 * 4);
    for (size_t idx = 0; idx < size; idx += 3) {
        const uint32_t chunk = (uint32_t{bytes[idx]} << 16) | (idx + 1 < size ? uint32_t{bytes[idx + 1]} << 8 : 0) |
                               (idx + 2 < size ? uint32_t{bytes[idx + 2]} : 0);
        text += kAlphabet[(chunk >> 18) & 63];
        text += kAlphabet[(chunk >> 12) & 63];
        text += idx + 1 < size ? kAlphabet[(chunk >> 6) & 63] : '=';
        text += idx + 2 < size ? kAlphabet[chunk & 63] : '=';
    }
    return text;
}

struct EmbeddingJob::Input {
    engine::RequestId engine_id = 0;
    std::shared_ptr<serving::RequestStream> stream;
    int64_t num_tokens = 0;
    std::vector<float> embedding;
    bool done = false;
};

EmbeddingJob::EmbeddingJob(std::string path, const RequestObserver& observer, ServingContext& context,
                           EmbeddingRequest request)
    : EngineJob(std::move(path), observer), context_(context), request_(std::move(request)) {}

EmbeddingJob::~EmbeddingJob() {
    for (Input& input : inputs_) input.stream->set_listener(nullptr);
    abort_running();
}

void EmbeddingJob::set_listener(const std::function<void()>& listener) {
    for (Input& input : inputs_) input.stream->set_listener(listener);
}

void EmbeddingJob::abort_running() {
    for (Input& input : inputs_) {
        if (!input.done) context_.engine.abort(input.engine_id);
        input.done = true;
    }
}

std::optional<Outcome> EmbeddingJob::submit(std::chrono::steady_clock::time_point start) {
    start_ = start;
    if (!request_.model.empty() && request_.model != context_.model_name) {
        return error_outcome(404, fmt::format("the model '{}' does not exist; this server serves '{}'", request_.model,
                                              context_.model_name), "model");
    }
    for (const PromptInput& text : request_.inputs) {
        std::vector<int32_t> ids = text.is_tokens ? text.token_ids : context_.tokenizer.encode(text.text, true, false);
        if (ids.empty()) return error_outcome(400, "an input is empty", "input");
        if (static_cast<int64_t>(ids.size()) >= context_.max_model_len) {
            return error_outcome(400, fmt::format("an input has {} tokens; this model's context is {} tokens: shorten it",
                                                  ids.size(), context_.max_model_len), "input");
        }
        Input input{.engine_id = context_.engine.next_id(), .num_tokens = static_cast<int64_t>(ids.size())};
        auto stream = context_.engine.submit(engine::EngineRequest{.id = input.engine_id, .prompt = std::move(ids),
                                                                   .max_tokens = 1, .embedding = context_.pooling,
                                                                   .arrival = start});
        if (!stream.is_ok()) {
            abort_running();
            return status_outcome(stream.status(), "input");
        }
        input.stream = std::move(stream.value());
        inputs_.push_back(std::move(input));
    }
    return std::nullopt;
}

bool EmbeddingJob::poll(std::vector<std::string>&) {
    if (finished_) return true;
    for (Input& input : inputs_) {
        while (!input.done) {
            std::optional<engine::RequestOutput> output = input.stream->next(std::chrono::milliseconds(0));
            if (!output) break;
            if (output->finish_reason) {
                input.embedding = output->embedding.value_or(std::vector<float>{});
                input.done = true;
            }
        }
        if (!input.done && input.stream->closed()) {  // failed: drain timeout, engine failure
            const Status error = input.stream->error();
            abort_running();
            outcome_ = status_outcome(error);
            finished_ = true;
            return true;
        }
    }
    if (std::all_of(inputs_.begin(), inputs_.end(), [](const Input& input) { return input.done; })) finish();
    return finished_;
}

void EmbeddingJob::finish() {
    finished_ = true;
    json data = json::array();
    int64_t prompt_tokens = 0;
    for (size_t idx = 0; idx < inputs_.size(); ++idx) {
        const std::vector<float>& vector = inputs_[idx].embedding;
        json embedding = request_.base64 ? json(base64_encode(vector.data(), vector.size() * sizeof(float))) : json(vector);
        data.push_back({{"object", "embedding"}, {"index", idx}, {"embedding", std::move(embedding)}});
        prompt_tokens += inputs_[idx].num_tokens;
    }
    outcome_.status = 200;
    outcome_.body = {{"object", "list"}, {"data", std::move(data)}, {"model", context_.model_name},
                     {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
    outcome_.prompt_tokens = prompt_tokens;
    outcome_.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    outcome_.finish_reason = "stop";
}

void EmbeddingJob::client_gone() {
    if (finished_) return;
    abort_running();
    finished_ = true;
    outcome_ = error_outcome(499, "the client closed the connection");
    outcome_.finish_reason = "abort";
}

}  // namespace tern::server
