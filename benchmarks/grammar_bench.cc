// The grammar engine against a real 152k vocabulary (Qwen2's, from ../shared/vocab): compile time (every position
// of the grammar run against every token; the invoice schema and a 50-property one) and the time of one token mask
// along a document, p50 and p99 over its tokens: `build/benchmarks/grammar_bench [--benchmark_filter=...]`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/token_masks.h"
#include "tokenizer/tokenizer.h"

namespace tern::grammar {
namespace {

// The invoice-like schema of docs/perf/structured.md (10 properties, nested arrays, enums, a pattern, a date),
// compiled as a request's response_format would be.
std::string invoice_grammar() {
    std::ifstream file(TERN_BENCH_DATA "/invoice.schema.json");
    const auto schema = nlohmann::ordered_json::parse(file);
    return json_schema_to_gbnf(schema, "root").value();
}

// A schema of 50 properties of mixed types, for the compile time the issue asks about.
std::string fifty_property_grammar() {
    nlohmann::ordered_json schema = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
    const char* kinds[] = {"string", "integer", "number", "boolean"};
    for (int i = 0; i < 50; ++i) {
        nlohmann::ordered_json property = {{"type", kinds[i % 4]}};
        if (i % 5 == 0) property = {{"enum", {"alpha", "beta", "gamma"}}};
        if (i % 7 == 0) property = {{"type", "array"}, {"items", {{"type", "integer"}}}, {"maxItems", 4}};
        schema["properties"]["field_" + std::to_string(i)] = property;
        schema["required"].push_back("field_" + std::to_string(i));
    }
    return json_schema_to_gbnf(schema, "root").value();
}

constexpr const char* kInvoiceDocument =
    R"json({"invoice_id": "INV-2024", "customer": "Ada Lovelace, Analytical Engines", "status": "sent", )json"
    R"json("currency": "GBP", "issued": "1843-09-05", "lines": [{"item": "Difference engine (repaired)", )json"
    R"json("qty": 2, "price": 1250.5}, {"item": "Punched cards \"gold\"", "qty": 500, "price": 0.25}], )json"
    R"json("paid": false, "notes": null, "tags": ["export"]})json";

std::shared_ptr<const TokenVocabulary> qwen2_vocabulary() {
    static std::shared_ptr<const TokenVocabulary> vocabulary = [] {
        auto gguf = GgufFile::open(TERN_SHARED_DIR "/vocab/ggml-vocab-qwen2.gguf");
        TERN_CHECK(gguf.is_ok()) << gguf.status().message();
        auto tokenizer = Tokenizer::from_gguf(*gguf.value());
        TERN_CHECK(tokenizer.is_ok()) << tokenizer.status().message();
        std::vector<std::string> bytes;
        for (int32_t id = 0; id < tokenizer.value()->vocab_size(); ++id) {
            bytes.push_back(tokenizer.value()->token_to_piece(id));
        }
        return std::make_shared<const TokenVocabulary>(std::move(bytes));
    }();
    return vocabulary;
}

void BM_CompileInvoiceGrammar(benchmark::State& state) {
    const Grammar grammar = parse_gbnf(invoice_grammar()).value();
    auto vocabulary = qwen2_vocabulary();
    for (auto _ : state) {
        CompiledGrammar compiled(grammar, vocabulary);
        state.counters["positions"] = static_cast<double>(compiled.stats().positions);
        state.counters["uncertain"] = static_cast<double>(compiled.stats().uncertain);
    }
}
BENCHMARK(BM_CompileInvoiceGrammar)->Unit(benchmark::kMillisecond)->Iterations(1);

// Schema to GBNF to a compiled grammar, as a request's first use of a schema pays it.
void BM_CompileFiftyPropertySchema(benchmark::State& state) {
    auto vocabulary = qwen2_vocabulary();
    for (auto _ : state) {
        CompiledGrammar compiled(parse_gbnf(fifty_property_grammar()).value(), vocabulary);
        state.counters["positions"] = static_cast<double>(compiled.stats().positions);
    }
}
BENCHMARK(BM_CompileFiftyPropertySchema)->Unit(benchmark::kMillisecond)->Iterations(1);

// One mask per token of the document's greedy tokenization by the grammar itself (the longest allowed token that
// continues the document), as a model following the grammar would produce.
void BM_MaskPerToken(benchmark::State& state) {
    auto vocabulary = qwen2_vocabulary();
    auto compiled = std::make_shared<CompiledGrammar>(parse_gbnf(invoice_grammar()).value(), vocabulary);
    std::vector<double> micros;
    for (auto _ : state) {
        GrammarMatcher matcher(compiled);
        TokenMask mask;
        std::string_view rest = kInvoiceDocument;
        while (!rest.empty()) {
            const auto start = std::chrono::steady_clock::now();
            matcher.fill_next_token_mask(mask);
            micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
            int32_t best = -1;
            for (int32_t id = 0; id < static_cast<int32_t>(vocabulary->size()); ++id) {
                const std::string& bytes = vocabulary->bytes(id);
                if (mask.test(id) && rest.substr(0, bytes.size()) == bytes &&
                    (best < 0 || bytes.size() > vocabulary->bytes(best).size())) {
                    best = id;
                }
            }
            TERN_CHECK(best >= 0) << "the grammar refuses the document at: " << rest;
            TERN_CHECK(matcher.accept_token(best)) << "a token from the mask was refused";
            rest.remove_prefix(vocabulary->bytes(best).size());
        }
    }
    std::sort(micros.begin(), micros.end());
    state.counters["tokens"] = static_cast<double>(micros.size()) / static_cast<double>(state.iterations());
    state.counters["p50_us"] = micros[micros.size() / 2];
    state.counters["p99_us"] = micros[micros.size() * 99 / 100];
    state.counters["max_us"] = micros.back();
}
BENCHMARK(BM_MaskPerToken)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace tern::grammar

BENCHMARK_MAIN();
