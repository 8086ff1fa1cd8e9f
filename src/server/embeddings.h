// /v1/embeddings (OpenAI's request and response): each input becomes an engine request that computes the input and
// pools its final hidden states (mean or last token, the server's --pooling) into a unit-length vector, as
// llama-server and Ollama offer for decoder models. Vectors come as JSON floats or, with encoding_format "base64",
// as the little-endian float32 bytes in base64 (what the official clients ask for by default).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/http_routes.h"

namespace tern::server {

struct EmbeddingRequest {
    std::string model;
    std::vector<PromptInput> inputs;
    bool base64 = false;
};

inline constexpr int kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

// Decodes and checks a body; `embedding_dim` is the only `dimensions` accepted (tern does not truncate).
std::variant<EmbeddingRequest, RequestError> parse_embedding_request(const nlohmann::json& body, int64_t embedding_dim);

// Base64 of raw bytes (RFC 4648, with padding).
std::string base64_encode(const void* data, size_t size);

class EmbeddingJob final : public EngineJob {
public:
    EmbeddingJob(std::string path, const RequestObserver& observer, ServingContext& context, EmbeddingRequest request);
    ~EmbeddingJob() override;  // clears the listeners and aborts what is still running

    // Tokenizes and submits every input; on failure the outcome to answer at once.
    std::optional<Outcome> submit(std::chrono::steady_clock::time_point start);

    http::Delivery delivery() const override { return http::Delivery::kWhole; }
    void set_listener(const std::function<void()>& listener) override;
    bool poll(std::vector<std::string>& events) override;
    void client_gone() override;
    const Outcome& outcome() const override { return outcome_; }

private:
    struct Input;
    void abort_running();
    void finish();

    ServingContext& context_;
    EmbeddingRequest request_;
    std::vector<Input> inputs_;
    std::chrono::steady_clock::time_point start_;
    bool finished_ = false;
    Outcome outcome_;
};

}  // namespace tern::server
