// The request handlers of HttpServer that do real work: generation (whole or streamed) and (de)tokenization.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "server/choice_runner.h"
#include "server/http_server.h"

namespace tern::server {
namespace {

using nlohmann::json;

void send_json(httplib::Response& response, int status, const json& body) {
    response.status = status;
    response.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::optional<json> parse_body(const httplib::Request& request, httplib::Response& response) {
    json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) {
        send_json(response, 400, error_body(400, "the request body must be a JSON object (valid JSON, valid UTF-8)"));
        return std::nullopt;
    }
    return body;
}

// Everything a streamed response needs after the handler returns (httplib calls the provider later).
struct StreamJob {
    PreparedRequest prepared;
    std::unique_ptr<ChoiceRunner> runner;
    std::chrono::steady_clock::time_point start;
};

}  // namespace

void HttpServer::handle_generation(ServingContext& context, const httplib::Request& request,
                                   httplib::Response& response, api::Endpoint endpoint) {
    const std::string path(api::endpoint_path(endpoint));
    const auto start = std::chrono::steady_clock::now();
    const auto finish = [&](const Outcome& outcome) {
        if (outcome.status == 429) response.set_header("Retry-After", "1");
        send_json(response, outcome.status, outcome.body);
        if (on_request_) on_request_(path, outcome);
    };
    std::optional<json> body = parse_body(request, response);
    if (!body) return;
    auto parsed = parse_completion_request(endpoint, *body);
    if (auto* error = std::get_if<RequestError>(&parsed)) return finish(error_outcome(400, error->message, error->param));
    auto prepared = prepare_request(context, std::move(std::get<CompletionRequest>(parsed)));
    if (auto* outcome = std::get_if<Outcome>(&prepared)) return finish(*outcome);
    auto job = std::make_shared<StreamJob>();
    job->prepared = std::move(std::get<PreparedRequest>(prepared));
    job->runner = std::make_unique<ChoiceRunner>(context, job->prepared);
    job->start = start;
    if (auto failed = job->runner->submit(start)) return finish(*failed);  // 429 at once when the queue is full
    if (!job->prepared.request.stream) return finish(run_request(*job->runner, job->prepared, nullptr, start));
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider("text/event-stream", [this, job, path](size_t, httplib::DataSink& sink) {
        const EventWriter writer = [&sink](std::string_view data) {
            if (data.empty()) return sink.is_writable();
            const std::string event = "data: " + std::string(data) + "\n\n";
            return sink.is_writable() && sink.write(event.data(), event.size());
        };
        Outcome outcome = run_request(*job->runner, job->prepared, &writer, job->start);
        if (outcome.status != 200 && outcome.status != 499) {
            writer(outcome.body.dump());
            writer("[DONE]");
        }
        if (on_request_) on_request_(path, outcome);
        job->runner.reset();  // aborts anything left before the connection closes
        sink.done();
        return true;
    });
}

void HttpServer::handle_tokenize(ServingContext& context, const httplib::Request& request,
                                 httplib::Response& response) {
    std::optional<json> body = parse_body(request, response);
    if (!body) return;
    const auto prompt = body->find("prompt");
    if (prompt == body->end() || !prompt->is_string()) {
        return send_json(response, 400, error_body(400, "'prompt' must be a string", "prompt"));
    }
    const auto add_special = body->find("add_special_tokens");
    const bool with_special = add_special == body->end() || !add_special->is_boolean() || add_special->get<bool>();
    const std::vector<int32_t> ids = context.tokenizer.encode(prompt->get<std::string>(), with_special, false);
    send_json(response, 200, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", context.max_model_len}});
}

void HttpServer::handle_detokenize(ServingContext& context, const httplib::Request& request,
                                   httplib::Response& response) {
    std::optional<json> body = parse_body(request, response);
    if (!body) return;
    const auto tokens = body->find("tokens");
    std::vector<int32_t> ids;
    bool valid = tokens != body->end() && tokens->is_array();
    for (size_t idx = 0; valid && idx < tokens->size(); ++idx) {
        const json& item = (*tokens)[idx];
        valid = item.is_number_integer() && item.get<int64_t>() >= 0 &&
                item.get<int64_t>() < context.tokenizer.vocab_size();
        if (valid) ids.push_back(item.get<int32_t>());
    }
    if (!valid) {
        return send_json(response, 400, error_body(400, "'tokens' must be a list of token ids of this vocabulary",
                                                   "tokens"));
    }
    send_json(response, 200, {{"prompt", context.tokenizer.decode(ids)}});
}

}  // namespace tern::server
