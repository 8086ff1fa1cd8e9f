// The grammar engine against a real 152k vocabulary (Qwen2's, from ../shared/vocab): compile time (every position
// of the grammar run against every token) and the time of one token mask along a document, p50 and p99 over its
// tokens: `build/benchmarks/grammar_bench [--benchmark_filter=...]`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "formats/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/token_masks.h"
#include "tokenizer/tokenizer.h"

namespace tern::grammar {
namespace {

// An invoice-like object: nested arrays, an enum, a pattern-like field, numbers (written by hand until the JSON
// Schema compiler lands).
constexpr const char* kInvoiceGrammar = R"(
root ::= "{" ws "\"id\":" ws id "," ws "\"customer\":" ws string "," ws "\"status\":" ws status "," ws
         "\"lines\":" ws lines "," ws "\"total\":" ws number ws "}"
id ::= "\"" [A-Z]{3} "-" [0-9]{4} "\""
status ::= "\"draft\"" | "\"sent\"" | "\"paid\""
lines ::= "[" ws (line ("," ws line)*)? ws "]"
line ::= "{" ws "\"item\":" ws string "," ws "\"qty\":" ws integer "," ws "\"price\":" ws number ws "}"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\""
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
number ::= integer ("." [0-9]{1,16})?
ws ::= | " " | "\n" [ \t]{0,20}
)";

constexpr const char* kInvoiceDocument =
    R"json({"id": "INV-2024", "customer": "Ada Lovelace, Analytical Engines Ltd.", "status": "sent", "lines": )json"
    R"json([{"item": "Difference engine (refurbished)", "qty": 2, "price": 1250.5}, {"item": "Punched cards )json"
    R"json(\"gold\"", "qty": 500, "price": 0.25}], "total": 2626})json";

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
    const Grammar grammar = parse_gbnf(kInvoiceGrammar).value();
    auto vocabulary = qwen2_vocabulary();
    for (auto _ : state) {
        CompiledGrammar compiled(grammar, vocabulary);
        state.counters["positions"] = static_cast<double>(compiled.stats().positions);
        state.counters["uncertain"] = static_cast<double>(compiled.stats().uncertain);
    }
}
BENCHMARK(BM_CompileInvoiceGrammar)->Unit(benchmark::kMillisecond)->Iterations(1);

// One mask per token of the document's greedy tokenization by the grammar itself (the longest allowed token that
// continues the document), as a model following the grammar would produce.
void BM_MaskPerToken(benchmark::State& state) {
    auto vocabulary = qwen2_vocabulary();
    auto compiled = std::make_shared<CompiledGrammar>(parse_gbnf(kInvoiceGrammar).value(), vocabulary);
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
